package core

import "errors"

func asType[T error](err error, target *T) bool { return errors.As(err, target) }
