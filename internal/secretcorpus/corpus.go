// Package secretcorpus is the attack suite's corpus of realistic fake
// secrets: one sample for each of more than fifty kinds (provider keys,
// tokens, private keys, JWTs, URL credentials, password assignments, ...),
// each written as a developer or an agent would write it, and near-misses
// that must survive redaction untouched. It is written from the providers'
// published formats, independently of extract/redact's rules and their own
// samples, so the suite checks the rules as well as the paths.
//
// Every value is made from a fixed seed: the corpus is the same on every run.
package secretcorpus

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
)

// Secret is one sample: Text holds the secret in context, Secret is the
// part that must never be stored, logged or echoed.
type Secret struct {
	Kind   string
	Text   string
	Secret string
}

// Needles are the strings whose presence anywhere means the secret
// survived: the secret itself and a middle slice of it (a cut or a partial
// redaction keeps one).
func (s Secret) Needles() []string {
	out := []string{s.Secret}
	if n := len(s.Secret); n >= 24 {
		out = append(out, s.Secret[n/2-6:n/2+6])
	}
	return out
}

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	lower  = "abcdefghijklmnopqrstuvwxyz0123456789"
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	hexLow = "0123456789abcdef"
	b64url = alnum + "-_"
	b64    = alnum + "+/"
)

type gen struct{ r *rand.Rand }

func (g gen) s(set string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(set[g.r.IntN(len(set))])
	}
	return b.String()
}

// Secrets returns the corpus, more than fifty kinds.
func Secrets() []Secret {
	g := gen{rand.New(rand.NewPCG(13, 2026))}
	var out []Secret
	add := func(kind, secret, format string) {
		out = append(out, Secret{Kind: kind, Secret: secret, Text: strings.ReplaceAll(format, "$S", secret)})
	}
	add("anthropic", "sk-ant-api03-"+g.s(b64url, 93)+"AA", "export ANTHROPIC_API_KEY=$S")
	add("openai-project", "sk-proj-"+g.s(b64url, 48)+"T3BlbkFJ"+g.s(b64url, 48), "client = OpenAI(api_key=\"$S\")")
	add("openai-legacy", "sk-"+g.s(alnum, 20)+"T3BlbkFJ"+g.s(alnum, 20), "OPENAI_API_KEY=$S")
	add("groq", "gsk_"+g.s(alnum, 52), "GROQ_API_KEY=$S")
	add("huggingface", "hf_"+g.s(alnum, 34), "huggingface-cli login --token $S")
	add("replicate", "r8_"+g.s(alnum, 37), "REPLICATE_API_TOKEN=$S")
	add("aws-access-key-id", "AKIA"+g.s(upper[:26]+"234567", 16), "aws_access_key_id = $S")
	add("aws-secret-access-key", g.s(b64[:64], 40), "aws_secret_access_key = $S")
	add("google-api-key", "AIza"+g.s(b64url, 35), "https://maps.googleapis.com/maps/api/geocode/json?key=$S")
	add("gcp-service-account", "-----BEGIN PRIVATE KEY-----\\n"+g.s(b64, 64)+"\\n"+g.s(b64, 64)+"\\n-----END PRIVATE KEY-----\\n",
		`{"type": "service_account", "private_key": "$S", "client_email": "ci@proj.iam.gserviceaccount.com"}`)
	add("azure-storage-key", g.s(b64, 86)+"==", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=$S;EndpointSuffix=core.windows.net")
	add("digitalocean", "dop_v1_"+g.s(hexLow, 64), "doctl auth init -t $S")
	add("github-pat", "ghp_"+g.s(alnum, 36), "git clone https://$S@github.com/acme/app.git")
	add("github-fine-grained", "github_pat_"+g.s(alnum, 22)+"_"+g.s(alnum, 59), "GITHUB_TOKEN=$S gh pr list")
	add("github-oauth", "gho_"+g.s(alnum, 36), "token: $S")
	add("github-app", "ghs_"+g.s(alnum, 36), "Authorization: token $S")
	add("github-refresh", "ghr_"+g.s(alnum, 36), "refresh with $S")
	add("gitlab-pat", "glpat-"+g.s(b64url, 20), "git remote set-url origin https://oauth2:$S@gitlab.com/acme/app.git")
	add("gitlab-runner", "glrt-"+g.s(b64url, 20), "gitlab-runner register --token $S")
	add("slack-bot", "xoxb-"+g.s("0123456789", 12)+"-"+g.s("0123456789", 13)+"-"+g.s(alnum, 24), "SLACK_BOT_TOKEN=$S")
	add("slack-user", "xoxp-"+g.s("0123456789", 12)+"-"+g.s("0123456789", 12)+"-"+g.s("0123456789", 13)+"-"+g.s(hexLow, 32), "slack token $S")
	add("slack-webhook", "https://hooks.slack.com/services/T"+g.s(upper, 10)+"/B"+g.s(upper, 10)+"/"+g.s(alnum, 24), "curl -X POST -d '{\"text\":\"hi\"}' $S")
	add("discord-webhook", "https://discord.com/api/webhooks/"+g.s("0123456789", 18)+"/"+g.s(b64url, 68), "webhook_url = \"$S\"")
	add("telegram-bot", g.s("0123456789", 10)+":AA"+g.s(b64url, 33), "TELEGRAM_BOT_TOKEN=$S")
	add("stripe-live", "sk_live_"+g.s(alnum, 24), "Stripe.api_key = '$S'")
	add("stripe-restricted", "rk_live_"+g.s(alnum, 24), "STRIPE_KEY=$S")
	add("stripe-webhook", "whsec_"+g.s(alnum, 32), "STRIPE_WEBHOOK_SECRET=$S")
	add("sendgrid", "SG."+g.s(b64url, 22)+"."+g.s(b64url, 43), "SENDGRID_API_KEY=$S")
	add("mailgun", "key-"+g.s(hexLow, 32), "MAILGUN_API_KEY=$S")
	add("twilio-api-key", "SK"+g.s(hexLow, 32), "TWILIO_API_KEY=$S")
	add("npm", "npm_"+g.s(alnum, 36), "//registry.npmjs.org/:_authToken=$S")
	add("pypi", "pypi-AgEIcHlwaS5vcmc"+g.s(b64url, 70), "twine upload -u __token__ -p $S dist/*")
	add("dockerhub", "dckr_pat_"+g.s(b64url, 27), "docker login -u acme -p $S")
	add("shopify", "shpat_"+g.s(hexLow, 32), "X-Shopify-Access-Token: $S")
	add("square", "EAAA"+g.s(b64url, 60), "SQUARE_ACCESS_TOKEN=$S")
	add("databricks", "dapi"+g.s(hexLow, 32), "DATABRICKS_TOKEN=$S")
	add("terraform-cloud", g.s(alnum, 14)+".atlasv1."+g.s(alnum, 67), "token = \"$S\"")
	add("vault", "hvs."+g.s(b64url, 90), "VAULT_TOKEN=$S vault kv get secret/app")
	add("doppler", "dp.st."+g.s(alnum, 43), "DOPPLER_TOKEN=$S")
	add("pulumi", "pul-"+g.s(hexLow, 40), "PULUMI_ACCESS_TOKEN=$S")
	add("linear", "lin_api_"+g.s(alnum, 40), "LINEAR_API_KEY=$S")
	add("notion", "secret_"+g.s(alnum, 43), "NOTION_TOKEN=$S")
	add("atlassian", "ATATT3xFfGF0"+g.s(b64url, 180)+"="+g.s(hexLow, 8), "JIRA_API_TOKEN=$S")
	add("sentry-dsn", "https://"+g.s(hexLow, 32)+"@o"+g.s("0123456789", 6)+".ingest.sentry.io/"+g.s("0123456789", 7), "SENTRY_DSN=$S")
	add("grafana-service-account", "glsa_"+g.s(alnum, 32)+"_"+g.s(hexLow, 8), "GRAFANA_TOKEN=$S")
	add("newrelic", "NRAK-"+g.s(upper, 27), "NEW_RELIC_API_KEY=$S")
	add("age", "AGE-SECRET-KEY-1"+g.s("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "# $S")
	add("rsa-private-key", "-----BEGIN RSA PRIVATE KEY-----\n"+g.s(b64, 64)+"\n"+g.s(b64, 64)+"\n"+g.s(b64, 40)+"==\n-----END RSA PRIVATE KEY-----",
		"the deploy key is:\n$S\nsave it as ~/.ssh/id_rsa")
	add("openssh-private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"+g.s(b64, 40)+"\n"+g.s(b64, 70)+"\n-----END OPENSSH PRIVATE KEY-----",
		"cat > key <<EOF\n$S\nEOF")
	jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI" + g.s(b64url, 40) + "." + g.s(b64url, 43)
	add("jwt", jwt, "curl -H 'Authorization: Bearer $S' https://api.example.com/me")
	add("url-credentials", "Pg"+g.s(alnum, 18), "DATABASE_URL=postgres://app:$S@db.internal:5432/app")
	add("redis-url-password", "rds"+g.s(alnum, 21), "redis-cli -u redis://default:$S@cache.internal:6379")
	add("db-connection-string", "Sq1"+g.s(alnum, 17), "Server=db;Database=app;User Id=sa;Password=$S;")
	add("basic-auth-header", base64.StdEncoding.EncodeToString([]byte("admin:"+g.s(alnum, 18))), "Authorization: Basic $S")
	add("bearer-token", g.s(b64url, 40), "-H \"Authorization: Bearer $S\"")
	add("curl-user", "cu"+g.s(alnum, 16), "curl -u deploy:$S https://artifacts.internal/upload")
	add("mysql-flag", "My"+g.s(alnum, 14), "mysql -u root -p$S app < dump.sql")
	add("cli-password-flag", "Pw"+g.s(alnum, 16), "./deploy --password $S --env prod")
	add("password-env", "Hn"+g.s(alnum, 14)+"!9", "DB_PASSWORD=$S")
	add("password-yaml", "Yp"+g.s(alnum, 16), "database:\n  user: app\n  password: $S\n")
	add("password-json", "Jp"+g.s(alnum, 16), `{"username": "app", "password": "$S"}`)
	add("api-key-assignment", g.s(alnum, 32), "api_key = \"$S\"")
	add("client-secret", g.s(b64url, 40), "CLIENT_SECRET=$S")
	add("heroku", "HRKU-"+g.s(b64url, 60), "HEROKU_API_KEY=$S")
	add("cloudflare-api-token", g.s(b64url, 40), "CLOUDFLARE_API_TOKEN=$S")
	return out
}

// NearMisses are texts that look like secrets but are not: placeholders,
// documentation, hashes, ids. Redaction must leave every one unchanged.
func NearMisses() []string {
	return []string{
		"export OPENAI_API_KEY=<your-api-key>",
		"GITHUB_TOKEN=${GITHUB_TOKEN}",
		"password: changeme",
		"aws_access_key_id = AKIAXXXXXXXXXXXXXXXX",
		"the commit is 3f786850e387550fdab836ed7e6dc881de23001b",
		"sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"uuid 123e4567-e89b-12d3-a456-426614174000 names the run",
		"keys start with sk-ant-api03- and are long",
		"set password = os.environ[\"DB_PASSWORD\"] in settings.py",
		"use ghp_ tokens only for scripts",
		"curl -u $USER:$TOKEN https://example.com",
		"postgres://localhost:5432/app",
		"go test -race ./... && go vet ./...",
		"the Authorization header carries Bearer <token>",
		"see https://github.com/acme/app/pull/42",
		"set it: DB_PASSWORD=${DB_PASSWORD}",
		"note: CLIENT_SECRET=<your-client-secret>",
		"step 2: token_type=bearer",
	}
}
