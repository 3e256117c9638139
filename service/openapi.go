package service

import (
	_ "embed"

	"github.com/labstack/echo/v4"
)

// openAPIDoc is the OpenAPI 3 description of every route (openapi.json;
// TestOpenAPIMatchesRoutes keeps it in step with the router).
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the OpenAPI 3 document served at /openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openAPIDoc...) }

func (s *Server) openapi(c echo.Context) error {
	return c.Blob(200, echo.MIMEApplicationJSON, openAPIDoc)
}
