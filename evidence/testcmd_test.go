package evidence

import "testing"

func TestTestCommand(t *testing.T) {
	tests := []struct {
		cmd      string
		want     bool
		decisive bool // the command line's exit status is the test's
	}{
		// Go
		{"go test ./...", true, true},
		{"go test -race -count=1 ./core/...", true, true},
		{"go build ./cmd/memex", true, true},
		{"go vet ./...", true, true},
		{"go run ./cmd/memex", false, false},
		{"go mod tidy", false, false},
		{"/usr/local/go/bin/go test ./...", true, true},
		{"cd core && go test ./...", true, true},
		{"CGO_ENABLED=0 GOOS=linux go build .", true, true},
		{"timeout 120 go test ./...", true, true},
		{"timeout -s KILL 2m go test ./...", true, true},
		{"sudo -E go test ./...", true, true},
		{"time go test ./...", true, true},
		{"go test ./... 2>&1 | tail -20", true, false},
		{"set -o pipefail; go test ./... 2>&1 | tail -20", true, true},
		{"go test ./... || true", true, false},
		{"go test ./...; echo done", true, false},
		{"go test ./... && echo ok", true, true},
		{"go build ./... ; go test ./...", true, true},
		{"go test ./... &", true, false},
		{"bash -c 'go test ./...'", true, true},
		{"sh -c \"cd x && go test ./... | cat\"", true, false},
		{"bash -lc 'make test'", true, true},
		// Rust
		{"cargo test", true, true},
		{"cargo +nightly test --all", true, true},
		{"cargo build --release", true, true},
		{"cargo check", true, true},
		{"cargo nextest run", true, true},
		{"cargo fmt", false, false},
		{"cargo run", false, false},
		// Python
		{"pytest -q tests/", true, true},
		{"python -m pytest -x", true, true},
		{"python3 -m pytest", true, true},
		{"python3.12 -m unittest discover", true, true},
		{"uv run pytest", true, true},
		{"poetry run pytest -k foo", true, true},
		{"tox -e py312", true, true},
		{"python script.py", false, false},
		{"python -m http.server", false, false},
		{"pip install -e .", false, false},
		// JS / TS
		{"npm test", true, true},
		{"npm t", true, true},
		{"npm run test", true, true},
		{"npm run test:unit -- --watch=false", true, true},
		{"npm run build", true, true},
		{"npm run lint", false, false},
		{"npm install", false, false},
		{"npm ci", false, false},
		{"npm build", false, false},
		{"pnpm test", true, true},
		{"pnpm build", true, true},
		{"pnpm run build", true, true},
		{"yarn test", true, true},
		{"yarn build", true, true},
		{"yarn test:e2e", true, true},
		{"yarn add react", false, false},
		{"bun test", true, true},
		{"npx jest --ci", true, true},
		{"npx vitest run", true, true},
		{"npx tsc --noEmit", true, true},
		{"tsc -p .", true, true},
		{"jest", true, true},
		{"vitest run", true, true},
		{"./node_modules/.bin/jest", true, true},
		{"npx prettier --write .", false, false},
		{"node index.js", false, false},
		{"deno test", true, true},
		// make, JVM, .NET, C/C++, bazel
		{"make", true, true},
		{"make test", true, true},
		{"make -j4 test", true, true},
		{"make -C build check", true, true},
		{"make build", true, true},
		{"make clean", false, false},
		{"make install", false, false},
		{"make fmt lint", false, false},
		{"mvn test", true, true},
		{"mvn -q verify", true, true},
		{"mvn package -DskipTests", true, true},
		{"./mvnw clean install", true, true},
		{"mvn dependency:tree", false, false},
		{"gradle test", true, true},
		{"./gradlew build", true, true},
		{"./gradlew :app:test --info", true, true},
		{"./gradlew tasks", false, false},
		{"dotnet test", true, true},
		{"dotnet build -c Release", true, true},
		{"dotnet run", false, false},
		{"ctest --output-on-failure", true, true},
		{"cmake --build build", true, true},
		{"cmake -S . -B build", false, false},
		{"bazel test //...", true, true},
		{"bazel build //cmd:memex", true, true},
		{"bazel query //...", false, false},
		// not tests
		{"", false, false},
		{"ls -la", false, false},
		{"cat go.test.log", false, false},
		{"echo 'go test ./...'", false, false},
		{"grep -r 'pytest' .", false, false},
		{"git commit -m 'make test pass'", false, false},
		{"rg go test", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			if got := TestCommand(tt.cmd); got != tt.want {
				t.Fatalf("TestCommand(%q) = %t, want %t", tt.cmd, got, tt.want)
			}
			rec, dec := testCommand(tt.cmd)
			if rec != tt.want || dec != tt.decisive {
				t.Fatalf("testCommand(%q) = (%t, %t), want (%t, %t)", tt.cmd, rec, dec, tt.want, tt.decisive)
			}
		})
	}
}
