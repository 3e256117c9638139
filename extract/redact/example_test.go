package redact_test

import (
	"fmt"
	"os"

	"github.com/memex-dev/memex/extract/redact"
)

func ExampleRedactor_Redact() {
	r := redact.New()
	out, findings := r.Redact("export DB_PASSWORD=Xk29fLq8Zp\npostgres://app:Xk29fLq8Zp@db/app\nDB_USER=app")
	fmt.Println(out)
	for _, f := range findings {
		fmt.Println(f.Rule, f.Start, f.End)
	}
	// Output:
	// export DB_PASSWORD=[REDACTED:password-assignment]
	// postgres://app:[REDACTED:url-credentials]@db/app
	// DB_USER=app
	// password-assignment 19 29
	// url-credentials 45 55
}

func ExampleRedactor_NewWriter() {
	r := redact.New()
	w := r.NewWriter(os.Stdout)
	fmt.Fprintln(w, `{"kind":"tool_result","text":"OPENAI_API_KEY=sk-proj-Zq7Wm2Kx9Lp4Rt8Vn3Bc6Hd1Jf5Gs0Ay"}`)
	w.Close()
	// Output:
	// {"kind":"tool_result","text":"OPENAI_API_KEY=[REDACTED:openai-api-key]"}
}
