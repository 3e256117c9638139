package redact

// Character sets of the fake samples.
const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	hexLow = "0123456789abcdef"
	upNum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b64    = alnum + "+/"
	b64url = alnum + "-_"
	bech32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
)

// fake returns n deterministic pseudo-random characters of alpha: sample
// secrets are generated, so the source holds no secret-shaped literal.
func fake(alpha string, n int, seed uint32) string {
	b := make([]byte, n)
	x := seed*2654435761 + 12345
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = alpha[int(x>>16)%len(alpha)]
	}
	return string(b)
}

// Regex fragments shared by the keyword-anchored rules.
const (
	// assign is an assignment: optional closing quote of the key, an
	// operator (= : := =>), optional opening quote of the value.
	assign = `(?:\\?["'])?[ \t]*(?::=|=>|=|:)[ \t]*(?:\\?["'])?`
	// keyTail is the rest of a key after its anchor word (DD_API_KEY, …).
	keyTail = `[\w.-]*?`
	// endTok ends a token whose alphabet holds '-' and '_'.
	endTok = `(?:[^A-Za-z0-9_-]|$)`
	// valueTail is the value part of the assignment rules: group a opening
	// quote, b quoted value, c unquoted value, d what follows it.
	valueTail = `(?:\\?["'])?[ \t]*(?::=|=>|=|:)[ \t]*(?:(\\?["'])([^"'\\\r\n]+?)\\?["']|([^\s"'\\,;<>(){}\[\]=\x60][^\s"'\\,;<>(){}\[\]\x60]*)([(\[<]?))`
)

// joined returns the keywords "<first><sep><second>" for each first word and
// each separator the assignment regexes allow ("", "_", ".", "-").
func joined(firsts []string, second string) []string {
	var out []string
	for _, f := range firsts {
		for _, sep := range []string{"", "_", ".", "-"} {
			out = append(out, f+sep+second)
		}
	}
	return out
}

// DefaultRules returns the built-in rule set, most specific first: provider
// tokens, private keys and JWTs, credentials in URLs and headers, then the
// generic assignment and high-entropy rules. Each call returns fresh
// copies.
func DefaultRules() []Rule {
	jwtHeader := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
	jwt := jwtHeader + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFsaWNlIn0." + fake(b64url, 43, 77)
	pemBody := fake(b64, 64, 80) + "\n" + fake(b64, 64, 81) + "\n" + fake(b64, 40, 82) + "=="
	return []Rule{
		// --- AI providers -------------------------------------------------
		{
			ID: "anthropic-api-key", Description: "Anthropic API or admin key",
			Keywords: []string{"sk-ant-"},
			Pattern:  (`\bsk-ant-(?:api|admin|oat|sid)[0-9]{2}-[A-Za-z0-9_-]{32,}`),
			True:     []string{"ANTHROPIC_API_KEY=sk-ant-api03-" + fake(b64url, 93, 1) + "AA"},
			False:    []string{"keys start with sk-ant-api03- and are long", "sk-ant-api03-short"},
		},
		{
			ID: "openai-api-key", Description: "OpenAI API key (sk-, sk-proj-, sk-svcacct-, sk-admin-)",
			Keywords: []string{"sk-"}, MinEntropy: 3,
			Pattern: (`\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20,})\b`),
			True: []string{
				"export OPENAI_API_KEY=sk-proj-" + fake(b64url, 100, 2),
				`client = OpenAI(api_key="sk-` + fake(alnum, 48, 3) + `")`,
			},
			False: []string{
				"pip install scikit-learn; the sk-learn alias is common",
				"risk-" + fake(alnum, 30, 4),
				`api_key="sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxx"`,
			},
		},
		{
			ID: "groq-api-key", Description: "Groq API key", Keywords: []string{"gsk_"},
			Pattern: (`\bgsk_[A-Za-z0-9]{52}\b`),
			True:    []string{"GROQ_API_KEY=gsk_" + fake(alnum, 52, 5)},
			False:   []string{"gsk_" + fake(alnum, 20, 6)},
		},
		{
			ID: "replicate-api-token", Description: "Replicate API token", Keywords: []string{"r8_"},
			Pattern: (`\br8_[A-Za-z0-9]{37}\b`),
			True:    []string{"REPLICATE_API_TOKEN=r8_" + fake(alnum, 37, 7)},
			False:   []string{"r8_" + fake(alnum, 12, 8), "var r8_register = 1"},
		},
		{
			ID: "perplexity-api-key", Description: "Perplexity API key", Keywords: []string{"pplx-"},
			Pattern: (`\bpplx-[A-Za-z0-9]{48}\b`),
			True:    []string{"pplx-" + fake(alnum, 48, 9)},
			False:   []string{"pplx-api is the client"},
		},
		{
			ID: "huggingface-token", Description: "Hugging Face user or org token",
			Keywords: []string{"hf_", "api_org_"}, MinEntropy: 3,
			Pattern: (`\b(?:hf_|api_org_)[A-Za-z0-9]{34,}\b`),
			True:    []string{"huggingface-cli login --token hf_" + fake(alnum, 34, 10)},
			False:   []string{"hf_hub_download(repo_id=...)", "hf_" + fake(alnum, 20, 11)},
		},
		// --- cloud providers ----------------------------------------------
		{
			ID: "aws-access-key-id", Description: "AWS access key id",
			Keywords: []string{"akia", "asia", "abia", "acca", "a3t"},
			Pattern:  (`\b((?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16})\b`), SecretGroup: 1,
			True:  []string{"aws_access_key_id = AKIA" + fake(upNum, 16, 12)},
			False: []string{"aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIA" + fake(upNum, 8, 13)},
		},
		{
			ID: "aws-secret-access-key", Description: "AWS secret access key (keyword-anchored)",
			Keywords: []string{"aws"}, MinEntropy: 3.5, SecretGroup: 1,
			Pattern: (`(?i)\baws` + keyTail + `(?:secret|sk)` + keyTail + assign + `([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)`),
			True: []string{
				"aws_secret_access_key = " + fake(b64, 40, 14),
				`{"AWS_SECRET_ACCESS_KEY": "` + fake(b64, 40, 15) + `"}`,
			},
			False: []string{
				"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
				"aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}",
				"aws_secret_access_key is read from ~/.aws/credentials",
			},
		},
		{
			ID: "aws-session-token", Description: "AWS session token",
			Keywords: []string{"aws"}, MinEntropy: 3.5, SecretGroup: 1,
			Pattern: (`(?i)\baws[\w.-]{0,10}?session[\w.-]{0,10}?token` + assign + `([A-Za-z0-9/+=]{100,})`),
			True:    []string{"export AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjE" + fake(b64, 300, 17)},
			False:   []string{"export AWS_SESSION_TOKEN=$TOKEN", "aws_session_token is optional"},
		},
		{
			ID: "google-api-key", Description: "Google API key", Keywords: []string{"aiza"},
			Pattern: (`\b(AIza[0-9A-Za-z_-]{35})` + endTok), SecretGroup: 1,
			True:  []string{"GOOGLE_API_KEY=AIza" + fake(b64url, 35, 18)},
			False: []string{"AIza" + fake(b64url, 20, 19), "the key starts with AIza"},
		},
		{
			ID: "google-oauth-client-secret", Description: "Google OAuth client secret",
			Keywords: []string{"gocspx-"}, SecretGroup: 1,
			Pattern: (`\b(GOCSPX-[A-Za-z0-9_-]{28})` + endTok),
			True:    []string{`"client_secret": "GOCSPX-` + fake(b64url, 28, 20) + `"`},
			False:   []string{"GOCSPX-" + fake(b64url, 10, 21)},
		},
		{
			ID: "google-oauth-access-token", Description: "Google OAuth access token",
			Keywords: []string{"ya29."}, MinEntropy: 3.5,
			Pattern: (`\bya29\.[0-9A-Za-z_-]{30,}`),
			True:    []string{"Authorization: Bearer ya29." + fake(b64url, 120, 22)},
			False:   []string{"ya29.short", "ya29.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
		},
		{
			ID: "gcp-service-account-key", Description: "GCP service-account JSON private_key",
			Keywords: []string{"private_key"}, SecretGroup: 1,
			Pattern: (`\\?"private_key\\?"\s*:\s*\\?"(-----BEGIN[^"]*?PRIVATE KEY-----[^"]*?)\\?"`),
			True: []string{`{"type": "service_account", "private_key_id": "` + fake(hexLow, 40, 23) +
				`", "private_key": "-----BEGIN PRIVATE KEY-----\n` + fake(b64, 64, 24) + `\n` + fake(b64, 64, 25) +
				`\n-----END PRIVATE KEY-----\n", "client_email": "svc@proj.iam.gserviceaccount.com"}`},
			False: []string{`{"private_key": ""}`, `{"private_key_id": "abc"}`},
		},
		{
			ID: "azure-storage-account-key", Description: "Azure storage account key",
			Keywords: []string{"accountkey", "azure"}, SecretGroup: 1,
			Pattern: (`(?i)(?:AccountKey=|azure` + keyTail + `key` + assign + `)([A-Za-z0-9+/]{86}==)`),
			True: []string{
				"DefaultEndpointsProtocol=https;AccountName=prodlogs;AccountKey=" + fake(b64, 86, 26) + "==;EndpointSuffix=core.windows.net",
				"AZURE_STORAGE_KEY=" + fake(b64, 86, 27) + "==",
			},
			False: []string{"AccountKey=<account-key>", "AccountKey=" + fake(b64, 30, 28)},
		},
		{
			ID: "azure-shared-access-key", Description: "Azure Service Bus / Event Hubs shared access key",
			Keywords: []string{"sharedaccesskey="}, SecretGroup: 1, MinEntropy: 3.5,
			Pattern: (`(?i)SharedAccessKey=([A-Za-z0-9+/=]{40,})`),
			True:    []string{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=" + fake(b64, 43, 29) + "="},
			False:   []string{"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=<key>"},
		},
		{
			ID: "azure-sas-token", Description: "Azure shared access signature",
			Keywords: []string{"sig="}, SecretGroup: 1, MinEntropy: 3.5,
			Pattern: (`[?&]sig=([A-Za-z0-9%+/]{40,}(?:%3D|=){0,2})`),
			True:    []string{"https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&sp=r&sig=" + fake(alnum, 43, 30) + "%3D"},
			False:   []string{"https://example.org/?sig=abc"},
		},
		{
			ID: "azure-ad-client-secret", Description: "Azure AD (Entra) client secret",
			Keywords: []string{"q~"}, SecretGroup: 1,
			Pattern: (`(?:^|[\\'"\x60\s>=:(,)])([A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:$|[\\'"\x60\s<),])`),
			True:    []string{`AZURE_CLIENT_SECRET="abc8Q~` + fake(alnum, 34, 31) + `"`},
			False:   []string{"version 8Q~ of the doc"},
		},
		{
			ID: "digitalocean-token", Description: "DigitalOcean token",
			Keywords: []string{"dop_v1_", "doo_v1_", "dor_v1_"},
			Pattern:  (`\bdo[opr]_v1_[a-f0-9]{64}\b`),
			True:     []string{"DIGITALOCEAN_TOKEN=dop_v1_" + fake(hexLow, 64, 32)},
			False:    []string{"dop_v1_" + fake(hexLow, 20, 33)},
		},
		{
			ID: "heroku-api-key", Description: "Heroku API key (keyword-anchored UUID)",
			Keywords: []string{"heroku"}, SecretGroup: 1,
			Pattern: (`(?i)heroku` + keyTail + assign + `([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b`),
			True:    []string{"HEROKU_API_KEY=" + fake(hexLow, 8, 34) + "-" + fake(hexLow, 4, 35) + "-" + fake(hexLow, 4, 36) + "-" + fake(hexLow, 4, 37) + "-" + fake(hexLow, 12, 38)},
			False:   []string{"heroku apps:create my-app"},
		},
		{
			ID: "heroku-api-key-v2", Description: "Heroku API key (HRKU- form)",
			Keywords: []string{"hrku-"},
			Pattern:  (`\bHRKU-[A-Za-z0-9_-]{40,}`),
			True:     []string{"HRKU-AA" + fake(b64url, 58, 39)},
			False:    []string{"HRKU-short"},
		},
		{
			ID: "cloudflare-api-token", Description: "Cloudflare API token or global key (keyword-anchored)",
			Keywords: []string{"cloudflare", "cf_api"}, SecretGroup: 1, MinEntropy: 3.5,
			Pattern: (`(?i)(?:cloudflare|cf_api)` + keyTail + assign + `([A-Za-z0-9_-]{40}|[a-f0-9]{37})` + endTok),
			True:    []string{"CLOUDFLARE_API_TOKEN=" + fake(b64url, 40, 40)},
			False:   []string{"CLOUDFLARE_API_TOKEN=${{ secrets.CF_TOKEN }}", "cloudflare: enabled"},
		},
		{
			ID: "cloudflare-origin-ca-key", Description: "Cloudflare origin CA key",
			Keywords: []string{"v1.0-"},
			Pattern:  (`\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}\b`),
			True:     []string{"v1.0-" + fake(hexLow, 24, 41) + "-" + fake(hexLow, 146, 42)},
			False:    []string{"release v1.0-rc1"},
		},
		{
			ID: "databricks-token", Description: "Databricks personal access token",
			Keywords: []string{"dapi"},
			Pattern:  (`\bdapi[a-f0-9]{32}(?:-[0-9]+)?\b`),
			True:     []string{"DATABRICKS_TOKEN=dapi" + fake(hexLow, 32, 43)},
			False:    []string{"dapi" + fake(hexLow, 10, 44), "the dapi prefix"},
		},
		{
			ID: "terraform-cloud-token", Description: "Terraform Cloud / Enterprise API token",
			Keywords: []string{"atlasv1"},
			Pattern:  (`\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}`),
			True:     []string{`token = "` + fake(alnum, 14, 45) + ".atlasv1." + fake(b64url, 67, 46) + `"`},
			False:    []string{"tokens look like xxx.atlasv1.yyy"},
		},
		{
			ID: "pulumi-access-token", Description: "Pulumi access token", Keywords: []string{"pul-"},
			Pattern: (`\bpul-[a-f0-9]{40}\b`),
			True:    []string{"PULUMI_ACCESS_TOKEN=pul-" + fake(hexLow, 40, 47)},
			False:   []string{"pul-" + fake(hexLow, 12, 48)},
		},
		{
			ID: "vault-token", Description: "HashiCorp Vault token (hvs./hvb./hvr.)",
			Keywords: []string{"hvs.", "hvb.", "hvr."}, MinEntropy: 3.5,
			Pattern: (`\bhv[sbr]\.[A-Za-z0-9_-]{24,}`),
			True:    []string{"VAULT_TOKEN=hvs." + fake(b64url, 90, 49)},
			False:   []string{"hvs.short", "see hvs.CAESIxxxxxxxxxxxxxxxxxxxxxxxxx"},
		},
		{
			ID: "doppler-token", Description: "Doppler token",
			Keywords: []string{"dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."},
			Pattern:  (`\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9_.-]{40,}`),
			True:     []string{"DOPPLER_TOKEN=dp.st.prd." + fake(alnum, 43, 50)},
			False:    []string{"dp.st.short"},
		},
		{
			ID: "planetscale-token", Description: "PlanetScale token or password",
			Keywords: []string{"pscale_"},
			Pattern:  (`\bpscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,}`),
			True:     []string{"pscale_pw_" + fake(b64url, 43, 51)},
			False:    []string{"pscale_tkn_short"},
		},
		{
			ID: "supabase-token", Description: "Supabase access token or secret key",
			Keywords: []string{"sbp_", "sb_secret_"},
			Pattern:  (`\b(?:sbp_[a-f0-9]{40}\b|sb_secret_[A-Za-z0-9_-]{30,})`),
			True:     []string{"SUPABASE_ACCESS_TOKEN=sbp_" + fake(hexLow, 40, 52)},
			False:    []string{"sbp_" + fake(hexLow, 10, 53)},
		},
		// --- source hosting and CI ----------------------------------------
		{
			ID: "github-pat", Description: "GitHub personal access token (classic)",
			Keywords: []string{"ghp_"}, Pattern: (`\bghp_[A-Za-z0-9]{36}\b`),
			True:  []string{"git clone https://ghp_" + fake(alnum, 36, 54) + "@github.com/o/r.git", "GITHUB_TOKEN=ghp_" + fake(alnum, 36, 55)},
			False: []string{"ghp_" + fake(alnum, 20, 56), "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
		},
		{
			ID: "github-fine-grained-pat", Description: "GitHub fine-grained personal access token",
			Keywords: []string{"github_pat_"}, Pattern: (`\bgithub_pat_[A-Za-z0-9_]{60,100}\b`),
			True:  []string{"github_pat_11" + fake(alnum, 20, 57) + "_" + fake(alnum, 59, 58)},
			False: []string{"github_pat_ prefix"},
		},
		{
			ID: "github-oauth-token", Description: "GitHub OAuth access token",
			Keywords: []string{"gho_"}, Pattern: (`\bgho_[A-Za-z0-9]{36}\b`),
			True:  []string{"gho_" + fake(alnum, 36, 59)},
			False: []string{"gho_" + fake(alnum, 10, 60)},
		},
		{
			ID: "github-app-token", Description: "GitHub App user-to-server or server-to-server token",
			Keywords: []string{"ghu_", "ghs_"}, Pattern: (`\bgh[us]_[A-Za-z0-9]{36}\b`),
			True:  []string{"ghs_" + fake(alnum, 36, 61), "ghu_" + fake(alnum, 36, 62)},
			False: []string{"ghs_" + fake(alnum, 35, 63)},
		},
		{
			ID: "github-refresh-token", Description: "GitHub refresh token",
			Keywords: []string{"ghr_"}, Pattern: (`\bghr_[A-Za-z0-9]{36,76}\b`),
			True:  []string{"ghr_" + fake(alnum, 76, 64)},
			False: []string{"ghr_" + fake(alnum, 12, 65)},
		},
		{
			ID: "gitlab-pat", Description: "GitLab personal, project or group access token",
			Keywords: []string{"glpat-"}, MinEntropy: 3, Pattern: (`\bglpat-[A-Za-z0-9_-]{20,}`),
			True:  []string{"GITLAB_TOKEN=glpat-" + fake(b64url, 20, 66)},
			False: []string{"glpat-xxxxxxxxxxxxxxxxxxxx", "glpat-short"},
		},
		{
			ID: "gitlab-runner-token", Description: "GitLab runner authentication or registration token",
			Keywords: []string{"glrt-", "gr1348941"}, MinEntropy: 3,
			Pattern: (`\b(?:glrt-|GR1348941)[A-Za-z0-9_-]{20,}`),
			True:    []string{"gitlab-runner register --token glrt-" + fake(b64url, 20, 67), "GR1348941" + fake(b64url, 20, 68)},
			False:   []string{"glrt-short"},
		},
		{
			ID: "gitlab-pipeline-trigger-token", Description: "GitLab pipeline trigger token",
			Keywords: []string{"glptt-"}, Pattern: (`\bglptt-[0-9a-f]{40}\b`),
			True:  []string{"glptt-" + fake(hexLow, 40, 69)},
			False: []string{"glptt-" + fake(hexLow, 10, 70)},
		},
		{
			ID: "gitlab-deploy-token", Description: "GitLab deploy token",
			Keywords: []string{"gldt-"}, MinEntropy: 3, Pattern: (`\bgldt-[A-Za-z0-9_-]{20,}`),
			True:  []string{"gldt-" + fake(b64url, 20, 71)},
			False: []string{"gldt-short"},
		},
		{
			ID: "buildkite-token", Description: "Buildkite API token",
			Keywords: []string{"bkua_"}, Pattern: (`\bbkua_[a-f0-9]{40}\b`),
			True:  []string{"BUILDKITE_API_TOKEN=bkua_" + fake(hexLow, 40, 72)},
			False: []string{"bkua_" + fake(hexLow, 8, 73)},
		},
		{
			ID: "atlassian-api-token", Description: "Atlassian (Jira, Confluence) API token",
			Keywords: []string{"atatt3"}, MinEntropy: 3.5, Pattern: (`\bATATT3[A-Za-z0-9_=-]{60,}`),
			True:  []string{"JIRA_API_TOKEN=ATATT3xFfGF0" + fake(b64url, 180, 74)},
			False: []string{"ATATT3 tokens are long"},
		},
		{
			ID: "linear-api-key", Description: "Linear API key",
			Keywords: []string{"lin_api_"}, Pattern: (`\blin_api_[A-Za-z0-9]{40}\b`),
			True:  []string{"LINEAR_API_KEY=lin_api_" + fake(alnum, 40, 75)},
			False: []string{"lin_api_" + fake(alnum, 12, 76)},
		},
		{
			ID: "notion-token", Description: "Notion integration token",
			Keywords: []string{"secret_", "ntn_"}, MinEntropy: 3.5,
			Pattern: (`\b(?:secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35})\b`),
			True:    []string{"NOTION_TOKEN=secret_" + fake(alnum, 43, 77), "ntn_" + fake("0123456789", 11, 78) + fake(alnum, 35, 79)},
			False:   []string{"secret_key_base = Rails.application.credentials.secret_key_base"},
		},
		{
			ID: "postman-api-key", Description: "Postman API key",
			Keywords: []string{"pmak-"}, Pattern: (`(?i)\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b`),
			True:  []string{"PMAK-" + fake(hexLow, 24, 80) + "-" + fake(hexLow, 34, 81)},
			False: []string{"PMAK-" + fake(hexLow, 10, 82)},
		},
		// --- package registries -------------------------------------------
		{
			ID: "npm-access-token", Description: "npm access token",
			Keywords: []string{"npm_"}, Pattern: (`\bnpm_[A-Za-z0-9]{36}\b`),
			True:  []string{"NPM_TOKEN=npm_" + fake(alnum, 36, 83)},
			False: []string{"npm_config_cache=/tmp/npm", "npm_" + fake(alnum, 12, 84)},
		},
		{
			ID: "npmrc-auth-token", Description: "auth token in an .npmrc",
			Keywords: []string{"_auth"}, SecretGroup: 1,
			Pattern: (`(?i)_auth(?:Token)?[ \t]*=[ \t]*["']?([^\s"']{10,})`),
			True:    []string{"//registry.npmjs.org/:_authToken=" + fake(b64url, 36, 85)},
			False:   []string{"//registry.npmjs.org/:_authToken=${NPM_TOKEN}"},
		},
		{
			ID: "pypi-token", Description: "PyPI upload token",
			Keywords: []string{"pypi-ageichlwas5vcmc"}, Pattern: (`\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`),
			True:  []string{"password = pypi-AgEIcHlwaS5vcmc" + fake(b64url, 120, 86)},
			False: []string{"pypi-AgEIcHlwaS5vcmc"},
		},
		{
			ID: "dockerhub-pat", Description: "Docker Hub personal access token",
			Keywords: []string{"dckr_pat_"}, MinEntropy: 3, Pattern: (`\bdckr_pat_[A-Za-z0-9_-]{27,}`),
			True:  []string{"echo dckr_pat_" + fake(b64url, 27, 87) + " | docker login -u me --password-stdin"},
			False: []string{"dckr_pat_short"},
		},
		// --- chat, mail, messaging ----------------------------------------
		{
			ID: "slack-bot-token", Description: "Slack bot token",
			Keywords: []string{"xoxb-"}, Pattern: (`\bxoxb-[0-9]{10,13}-[0-9]{10,13}-[A-Za-z0-9]{24,34}\b`),
			True:  []string{"SLACK_BOT_TOKEN=xoxb-" + fake("0123456789", 12, 88) + "-" + fake("0123456789", 13, 89) + "-" + fake(alnum, 24, 90)},
			False: []string{"xoxb-1234-5678-abcdef"},
		},
		{
			ID: "slack-user-token", Description: "Slack user or refresh token",
			Keywords: []string{"xoxp-", "xoxe-"},
			Pattern:  (`\bxox[pe](?:-[0-9]{10,13}){3}-[A-Za-z0-9]{28,34}\b`),
			True:     []string{"xoxp-" + fake("0123456789", 12, 91) + "-" + fake("0123456789", 12, 92) + "-" + fake("0123456789", 13, 93) + "-" + fake(hexLow, 32, 94)},
			False:    []string{"xoxp-123-456"},
		},
		{
			ID: "slack-legacy-token", Description: "Slack legacy, app-level or workspace token",
			Keywords: []string{"xoxa-", "xoxo-", "xoxr-", "xoxs-"}, MinEntropy: 3,
			Pattern: (`\bxox[aors]-[0-9A-Za-z-]{20,}`),
			True:    []string{"xoxs-" + fake("0123456789", 10, 95) + "-" + fake(alnum, 24, 96)},
			False:   []string{"xoxa-short"},
		},
		{
			ID: "slack-app-token", Description: "Slack app-level token",
			Keywords: []string{"xapp-"}, Pattern: (`(?i)\bxapp-[0-9]-[A-Z0-9]{9,12}-[0-9]{10,14}-[a-z0-9]{32,64}\b`),
			True:  []string{"SLACK_APP_TOKEN=xapp-1-A" + fake(upNum, 10, 97) + "-" + fake("0123456789", 13, 98) + "-" + fake(hexLow, 64, 99)},
			False: []string{"xapp-1-short"},
		},
		{
			ID: "slack-webhook-url", Description: "Slack incoming webhook or workflow URL",
			Keywords: []string{"hooks.slack.com"},
			Pattern:  (`(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}`),
			True:     []string{"curl -X POST https://hooks.slack.com/services/T" + fake(upNum, 8, 100) + "/B" + fake(upNum, 8, 101) + "/" + fake(alnum, 24, 102)},
			False:    []string{"https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"},
		},
		{
			ID: "discord-webhook-url", Description: "Discord webhook URL",
			Keywords: []string{"discord"},
			Pattern:  (`https?://(?:canary\.|ptb\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_-]{60,68}`),
			True:     []string{"https://discord.com/api/webhooks/" + fake("0123456789", 18, 103) + "/" + fake(b64url, 68, 104)},
			False:    []string{"https://discord.com/api/webhooks/{id}/{token}"},
		},
		{
			ID: "discord-bot-token", Description: "Discord bot token",
			Keywords: []string{"discord", "bot"}, MinEntropy: 3.5, SecretGroup: 1,
			Pattern: (`\b([MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})` + endTok),
			True:    []string{`DISCORD_BOT_TOKEN="M` + fake(alnum, 23, 105) + "." + fake(b64url, 6, 106) + "." + fake(b64url, 27, 107) + `"`},
			False:   []string{"discord bot written in Go.Version.Something"},
		},
		{
			ID: "telegram-bot-token", Description: "Telegram bot token",
			Keywords: []string{":aa"}, SecretGroup: 1,
			Pattern: (`\b([0-9]{8,10}:AA[A-Za-z0-9_-]{33})` + endTok),
			True:    []string{"TELEGRAM_BOT_TOKEN=" + fake("123456789", 9, 108) + ":AA" + fake(b64url, 33, 109)},
			False:   []string{"12:AAB at 10:AA o'clock"},
		},
		{
			ID: "twilio-api-key", Description: "Twilio API key SID", Keywords: []string{"sk"}, MinEntropy: 3,
			Pattern: (`\bSK[0-9a-fA-F]{32}\b`),
			True:    []string{"TWILIO_API_KEY=SK" + fake(hexLow, 32, 110)},
			False:   []string{"SKU" + fake(hexLow, 32, 111)},
		},
		{
			ID: "twilio-auth-token", Description: "Twilio auth token (keyword-anchored)",
			Keywords: []string{"twilio"}, SecretGroup: 1, MinEntropy: 3,
			Pattern: (`(?i)twilio` + keyTail + `(?:auth|token|secret)` + keyTail + assign + `([a-f0-9]{32})\b`),
			True:    []string{"TWILIO_AUTH_TOKEN=" + fake(hexLow, 32, 112)},
			False:   []string{"TWILIO_AUTH_TOKEN=your_auth_token"},
		},
		{
			ID: "sendgrid-api-key", Description: "SendGrid API key", Keywords: []string{"sg."}, SecretGroup: 1,
			Pattern: (`\b(SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})` + endTok),
			True:    []string{"SENDGRID_API_KEY=SG." + fake(b64url, 22, 113) + "." + fake(b64url, 43, 114)},
			False:   []string{"SG.short.key"},
		},
		{
			ID: "mailgun-api-key", Description: "Mailgun API key", Keywords: []string{"key-"},
			Pattern: (`\bkey-[0-9a-f]{32}\b`),
			True:    []string{"MAILGUN_API_KEY=key-" + fake(hexLow, 32, 115)},
			False:   []string{"primary-key-constraint", "key-" + fake(hexLow, 12, 116)},
		},
		{
			ID: "mailchimp-api-key", Description: "Mailchimp API key", Keywords: []string{"-us"},
			Pattern: (`\b[0-9a-f]{32}-us[0-9]{1,2}\b`),
			True:    []string{"MAILCHIMP_KEY=" + fake(hexLow, 32, 117) + "-us21"},
			False:   []string{"region en-us1 and aws us-east-1"},
		},
		// --- payments, commerce, SaaS -------------------------------------
		{
			ID: "stripe-secret-key", Description: "Stripe secret key",
			Keywords: []string{"sk_live_", "sk_test_", "sk_prod_"},
			Pattern:  (`\bsk_(?:live|test|prod)_[A-Za-z0-9]{20,99}\b`),
			True:     []string{"stripe.api_key = 'sk_live_" + fake(alnum, 24, 118) + "'"},
			False:    []string{"sk_live_" + fake(alnum, 8, 119)},
		},
		{
			ID: "stripe-restricted-key", Description: "Stripe restricted key",
			Keywords: []string{"rk_live_", "rk_test_", "rk_prod_"},
			Pattern:  (`\brk_(?:live|test|prod)_[A-Za-z0-9]{20,99}\b`),
			True:     []string{"rk_live_" + fake(alnum, 24, 120)},
			False:    []string{"rk_live_short"},
		},
		{
			ID: "stripe-webhook-secret", Description: "Stripe webhook signing secret",
			Keywords: []string{"whsec_"}, MinEntropy: 3, Pattern: (`\bwhsec_[A-Za-z0-9+/=]{32,}`),
			True:  []string{"STRIPE_WEBHOOK_SECRET=whsec_" + fake(alnum, 32, 121)},
			False: []string{"whsec_short"},
		},
		{
			ID: "shopify-token", Description: "Shopify access, custom-app or shared-secret token",
			Keywords: []string{"shpat_", "shpca_", "shppa_", "shpss_"},
			Pattern:  (`\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`),
			True:     []string{"X-Shopify-Access-Token: shpat_" + fake(hexLow, 32, 122)},
			False:    []string{"shpat_" + fake(hexLow, 12, 123)},
		},
		{
			ID: "square-access-token", Description: "Square access token",
			Keywords: []string{"eaaa", "sq0atp-"}, MinEntropy: 3.5,
			Pattern: (`\b(?:EAAA|sq0atp-)[A-Za-z0-9_-]{22,60}`),
			True:    []string{"SQUARE_ACCESS_TOKEN=EAAA" + fake(b64url, 60, 124)},
			False:   []string{"EAAAshort"},
		},
		{
			ID: "square-oauth-secret", Description: "Square OAuth application secret",
			Keywords: []string{"sq0csp-"}, Pattern: (`\bsq0csp-[A-Za-z0-9_-]{43}`),
			True:  []string{"sq0csp-" + fake(b64url, 43, 125)},
			False: []string{"sq0csp-short"},
		},
		{
			ID: "paypal-braintree-access-token", Description: "PayPal Braintree access token",
			Keywords: []string{"access_token$production$"},
			Pattern:  (`\baccess_token\$production\$[a-z0-9]{16}\$[a-f0-9]{32}\b`),
			True:     []string{"access_token$production$" + fake("abcdefghijklmnopqrstuvwxyz0123456789", 16, 126) + "$" + fake(hexLow, 32, 127)},
			False:    []string{"access_token$sandbox$abc$def"},
		},
		{
			ID: "algolia-api-key", Description: "Algolia admin or search API key (keyword-anchored)",
			Keywords: []string{"algolia"}, SecretGroup: 1, MinEntropy: 3,
			Pattern: (`(?i)algolia` + keyTail + assign + `([a-f0-9]{32})\b`),
			True:    []string{"ALGOLIA_ADMIN_KEY=" + fake(hexLow, 32, 128)},
			False:   []string{"ALGOLIA_APP_ID=ABCDEF1234"},
		},
		{
			ID: "firebase-fcm-server-key", Description: "Firebase Cloud Messaging server key",
			Keywords: []string{"apa91b"}, Pattern: (`\bAAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}`),
			True:  []string{"Authorization: key=AAAA" + fake(b64url, 7, 129) + ":APA91b" + fake(b64url, 134, 130)},
			False: []string{"APA91b tokens"},
		},
		{
			ID: "okta-api-token", Description: "Okta API token (keyword-anchored or SSWS header)",
			Keywords: []string{"okta", "ssws"}, SecretGroup: 1, MinEntropy: 3.5,
			Pattern: (`(?i)(?:okta` + keyTail + assign + `|\bssws\s+)(00[A-Za-z0-9_-]{40})` + endTok),
			True:    []string{"Authorization: SSWS 00" + fake(b64url, 40, 131)},
			False:   []string{"OKTA_DOMAIN=dev-123.okta.com"},
		},
		// --- observability ------------------------------------------------
		{
			ID: "datadog-api-key", Description: "Datadog API or application key (keyword-anchored)",
			Keywords: []string{"datadog", "dd_api", "dd_app", "dd-api", "dd-app"}, SecretGroup: 1, MinEntropy: 3,
			Pattern: (`(?i)(?:datadog|\bdd[_-]ap[ip])` + keyTail + assign + `([a-f0-9]{40}|[a-f0-9]{32})\b`),
			True:    []string{"DD_API_KEY=" + fake(hexLow, 32, 132), `DATADOG_APP_KEY: "` + fake(hexLow, 40, 133) + `"`},
			False:   []string{"DD_API_KEY=<your-api-key>"},
		},
		{
			ID: "newrelic-api-key", Description: "New Relic user, insert or browser key",
			Keywords: []string{"nrak-", "nrii-", "nrjs-"},
			Pattern:  (`\bNR(?:AK|II|JS)-[A-Za-z0-9_-]{19,32}`),
			True:     []string{"NEW_RELIC_API_KEY=NRAK-" + fake(upNum, 27, 134)},
			False:    []string{"NRAK-short"},
		},
		{
			ID: "newrelic-license-key", Description: "New Relic license key",
			Keywords: []string{"nral"}, Pattern: (`\b[a-f0-9]{36}NRAL\b`),
			True:  []string{"NEW_RELIC_LICENSE_KEY=" + fake(hexLow, 36, 135) + "NRAL"},
			False: []string{"NRAL alone"},
		},
		{
			ID: "sentry-dsn", Description: "Sentry DSN key",
			Keywords: []string{"sentry"}, SecretGroup: 1,
			Pattern: (`https?://([a-f0-9]{32})(?::[a-f0-9]{32})?@[a-z0-9.-]*sentry\.io/[0-9]+`),
			True:    []string{"SENTRY_DSN=https://" + fake(hexLow, 32, 136) + "@o123456.ingest.sentry.io/4504"},
			False:   []string{"SENTRY_DSN=https://public@sentry.example.com/1"},
		},
		{
			ID: "sentry-auth-token", Description: "Sentry auth token",
			Keywords: []string{"sntrys_", "sntryu_"},
			Pattern:  (`\b(?:sntrys_[A-Za-z0-9+/=_]{60,}|sntryu_[a-f0-9]{64})`),
			True:     []string{"SENTRY_AUTH_TOKEN=sntryu_" + fake(hexLow, 64, 137)},
			False:    []string{"sntryu_short"},
		},
		{
			ID: "grafana-api-key", Description: "Grafana API key",
			Keywords: []string{"eyjrijoi"}, Pattern: (`\beyJrIjoi[A-Za-z0-9]{70,}={0,2}`),
			True:  []string{"eyJrIjoi" + fake(alnum, 80, 138)},
			False: []string{"eyJrIjoi" + fake(alnum, 20, 139)},
		},
		{
			ID: "grafana-cloud-token", Description: "Grafana Cloud access policy token",
			Keywords: []string{"glc_"}, MinEntropy: 3.5, Pattern: (`\bglc_[A-Za-z0-9+/]{32,}={0,2}`),
			True:  []string{"GRAFANA_TOKEN=glc_" + fake(b64, 80, 140)},
			False: []string{"glc_short"},
		},
		{
			ID: "grafana-service-account-token", Description: "Grafana service account token",
			Keywords: []string{"glsa_"}, Pattern: (`\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b`),
			True:  []string{"glsa_" + fake(alnum, 32, 141) + "_" + fake(hexLow, 8, 142)},
			False: []string{"glsa_short_abc"},
		},
		{
			ID: "mapbox-secret-token", Description: "Mapbox secret token",
			Keywords: []string{"sk.eyj"}, Pattern: (`\bsk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}`),
			True:  []string{"MAPBOX_TOKEN=sk.eyJ1Ijoi" + fake(b64url, 40, 143) + "." + fake(b64url, 22, 144)},
			False: []string{"pk.eyJ1IjoiZm9vIn0.public"},
		},
		// --- keys and tokens of any issuer ---------------------------------
		{
			ID: "private-key", Description: "PEM private key block (RSA, EC, OPENSSH, DSA, PGP, ENCRYPTED, PKCS#8), whole block",
			Keywords: []string{"private key"}, Multiline: true, MinEntropy: 4,
			Pattern: (`-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----|(?:(?:\\[rn]|\r|\n)+[A-Za-z0-9+/=:, -]+)+)`),
			True: []string{
				"-----BEGIN RSA PRIVATE KEY-----\n" + pemBody + "\n-----END RSA PRIVATE KEY-----",
				"-----BEGIN OPENSSH PRIVATE KEY-----\\n" + fake(b64, 70, 83) + "\\n" + fake(b64, 70, 84) + "\\n-----END OPENSSH PRIVATE KEY-----",
				"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + pemBody + "\n-----END PGP PRIVATE KEY BLOCK-----",
				"cat key.pem\n-----BEGIN EC PRIVATE KEY-----\n" + fake(b64, 64, 85) + "\n" + fake(b64, 50, 86),
			},
			False: []string{
				`if strings.HasPrefix(s, "-----BEGIN RSA PRIVATE KEY-----") {`,
				"-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
				"-----BEGIN PUBLIC KEY-----\n" + pemBody + "\n-----END PUBLIC KEY-----",
			},
		},
		{
			ID: "age-secret-key", Description: "age encryption secret key",
			Keywords: []string{"age-secret-key-1"}, Pattern: (`\bAGE-SECRET-KEY-1[` + bech32 + `]{58}\b`),
			True:  []string{"AGE-SECRET-KEY-1" + fake(bech32, 58, 145)},
			False: []string{"AGE-SECRET-KEY-1 prefix"},
		},
		{
			ID: "jwt", Description: "JSON Web Token", Keywords: []string{"eyj"}, MinEntropy: 3,
			Pattern: (`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}`),
			True:    []string{"token: " + jwt},
			False:   []string{jwtHeader + " is only a header", jwtHeader + ".eyJzdWIiOiIx"},
		},
		// --- credentials in URLs, headers, command lines --------------------
		{
			ID: "url-credentials", Description: "password in a URL (scheme://user:pass@host)",
			Keywords: []string{"://"}, SecretGroup: 1,
			Pattern: (`\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/?#@'"<>\x60]+:([^\s/?#'"<>\x60]{3,})@[A-Za-z0-9.\[\]_-]`),
			True: []string{
				"DATABASE_URL=postgres://app:" + fake(alnum, 16, 146) + "@db.internal:5432/app",
				"redis://default:s3cr3t-P4ss@cache:6379/0",
				"https://user:p@ss" + fake(alnum, 6, 147) + "@git.corp.net/r.git",
			},
			False: []string{
				"postgres://app:${PGPASSWORD}@localhost/app",
				"https://user@github.com/o/r",
				"http://localhost:8080/api",
				"mysql://root:password@localhost/test",
				"redis://u:pw@localhost:1",
			},
		},
		{
			ID: "db-connection-string", Description: "password in a key=value DB connection string or URL query",
			Keywords: []string{"password", "pwd", "passwd"}, SecretGroup: 1,
			Pattern: (`(?i)(?:\b(?:server|data source|host|address)[ \t]*=[^;\n]+;[^\n]*?\b|[?&;])(?:password|passwd|pwd)[ \t]*=[ \t]*([^;&'"\s]+)`),
			True: []string{
				"Server=tcp:db.corp.net,1433;Database=app;User Id=app;Password=" + fake(alnum, 14, 148) + ";",
				"jdbc:mysql://db:3306/app?user=app&password=" + fake(alnum, 12, 149),
			},
			False: []string{"Server=db;Database=app;Integrated Security=true;", "Server=db;Password=;"},
		},
		{
			ID: "basic-auth-header", Description: "HTTP Basic authorization header",
			Keywords: []string{"basic"}, SecretGroup: 1, MinEntropy: 2.5,
			Pattern: (`(?i)\bauthorization\\?["']?[ \t]*:[ \t]*basic[ \t]+([A-Za-z0-9+/]{8,}={0,2})`),
			True:    []string{`curl -H "Authorization: Basic ` + fake(b64, 28, 150) + `" https://api`},
			False:   []string{"Authorization: Basic <credentials>", "Authorization: Basic $CREDS"},
		},
		{
			ID: "bearer-token", Description: "HTTP Bearer token",
			Keywords: []string{"bearer"}, SecretGroup: 1, MinEntropy: 3,
			Pattern: (`(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{16,}={0,2})`),
			True:    []string{`-H "Authorization: Bearer ` + fake(b64url, 40, 151) + `"`},
			False:   []string{"Authorization: Bearer $TOKEN", "Authorization: Bearer <token>", "bearer tokens are sent in the Authorization header"},
		},
		{
			ID: "curl-basic-auth", Description: "user:password given to curl -u / --user",
			Keywords: []string{"curl"}, SecretGroup: 1,
			Pattern: (`(?:^|[ \t])(?:-u|--user)[ \t]*['"]?[^\s:'"]+:([^\s'"]{3,})`),
			True:    []string{"curl -u admin:" + fake(alnum, 12, 152) + " https://ci.corp.net/api"},
			False:   []string{"curl -u \"$USER:$PASS\" https://x", "curl -u admin https://x"},
		},
		{
			// The client's name is a word of its own wherever it stands: after
			// a path (/usr/bin/mysql), a hyphen (k-mysql), a backtick.
			ID: "mysql-password-flag", Description: "password attached to mysql -p",
			Keywords: []string{"mysql", "mariadb"}, SecretGroup: 1, Keep: keepMySQLPassword,
			Pattern: (`\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mariadb)\b[^\n|;&]*?[ \t]-p\\?["']?([^\s"'\\-][^\s"'\\]{2,})`),
			True: []string{
				"mysql -h db -u root -p" + fake(alnum, 10, 153) + " app < dump.sql",
				"k-mysql -u root -p" + fake(alnum, 14, 172),
				"/usr/local/bin/mysqldump -u backup -p" + fake(alnum, 12, 173) + " shop > shop.sql",
				"`mysql -uroot -p" + fake(alnum, 11, 174) + " -e 'select 1'`",
			},
			False: []string{
				"mysql -h db -u root -p app", "mysql -P 3306 -u root -p$MYSQL_PWD",
				"k-mysql -u root -p app", "/usr/bin/mysql -u root -p < init.sql",
				"docker run --name k-mysql -p3306:3306 mysql:8", "db_mysql_conf -psecretless",
			},
		},
		{
			ID: "cli-password-flag", Description: "password, secret or token given as a command-line flag",
			Keywords: []string{"-pass", "-pwd", "-secret", "-token", "-api", "-access-key", "-auth-token"}, SecretGroup: 1, Keep: keepCLIValue,
			Before: 64, After: 400,
			Pattern: (`(?i)(?:^|[\s"'])--?(?:[a-z0-9]+-)*(?:password|passwd|pass|pwd|secret|token|api-?key|access-key|secret-key|auth-token)(?:=|[ \t]+)\\?["']?([^\s"'\\]{3,})`),
			True: []string{
				"psql --password=" + fake(alnum, 12, 154) + " -h db",
				"vault login --token " + fake(alnum, 20, 155),
			},
			False: []string{"docker login --password-stdin", "--password $DB_PASS", "use the --token flag", "--token -v"},
		},
		// --- generic, keyword-anchored -------------------------------------
		{
			ID: "password-assignment", Description: "password assigned in code, env, YAML, JSON or TOML",
			Keywords: []string{"pass", "pw"}, SecretGroup: 3, Keep: keepAssignment("password", 4),
			Before: 96, After: 320,
			Pattern: (`(?:^|[^A-Za-z0-9_.-])([A-Za-z0-9_.-]+)` + valueTail),
			True: []string{
				`DB_PASSWORD=` + fake(alnum, 12, 156),
				`{"password": "` + fake(alnum, 10, 157) + `"}`,
				`password: hunter2!x`,
				`dbPassword := "` + fake(alnum, 10, 158) + `"`,
				`{\"passwd\":\"` + fake(alnum, 10, 159) + `\"}`,
				// after other text on the line: the first "key: value" read
				// ("it: DB_PASSWORD=…") is rejected and hides this one.
				`set it: DB_PASSWORD=` + fake(alnum, 12, 167),
				`text: DB_PASSWORD=` + fake(alnum, 12, 168) + `!9`,
				`note: "db_password=` + fake(alnum, 12, 169) + `"`,
			},
			False: []string{
				"password: ${DB_PASSWORD}",
				"password = os.environ[\"DB_PASSWORD\"]",
				"password = getpass()",
				"def login(password: str) -> bool:",
				`"password_hint": "Use a long one"`,
				`"password": "Please enter your password"`,
				"if password == \"\":",
				"password: changeme",
				`password: "<your-password>"`,
				"password = cfg.Password",
				"bypass = 1234567",
				"password: [REDACTED:password-assignment]",
				"password: *****",
				"--- PASS: TestHandler (0.01s)",
				"Main pass: walk the sorted list",
				"Password: userPassword,",
				"MinLevelPass = 0.25",
				"set it: DB_PASSWORD=${DB_PASSWORD}",
				"text: password = os.environ[\"DB_PASSWORD\"]",
				"note: password_hint=UseALongOne1",
				"step 2: password: changeme",
			},
		},
		{
			ID: "secret-assignment", Description: "secret, token or API key assigned in code, env, YAML, JSON or TOML",
			Keywords: append([]string{"secret", "token", "credential"},
				joined([]string{"api", "access", "auth", "private", "signing", "encryption", "master", "app"}, "key")...),
			SecretGroup: 3, MinEntropy: 3,
			Keep:    keepAssignment("secret", 8),
			Pattern: (`(?:^|[^A-Za-z0-9_.-])([A-Za-z0-9_.-]+)` + valueTail),
			True: []string{
				"API_KEY=" + fake(alnum, 32, 160),
				`client_secret: "` + fake(b64url, 24, 161) + `"`,
				`{"accessToken": "` + fake(alnum, 30, 162) + `"}`,
				`export SESSION_SECRET='` + fake(alnum, 20, 163) + `'`,
				"set it: CLIENT_SECRET=" + fake(b64url, 40, 170),
				"then run: export CLIENT_SECRET=" + fake(b64url, 40, 171),
			},
			False: []string{
				"max_tokens: 4096",
				"token_type: bearer",
				"secret_name: prod-db-credentials",
				`token = get_token()`,
				"apiKey: process.env.API_KEY",
				"SECRET_KEY=${SECRET_KEY}",
				`"api_key": "your_api_key_here"`,
				"token: accessToken",
				"accessKeyId: AKIAxxxxxxxxxxxxxxxx",
				`ReasonSecretBlocked = "secret_blocked"`,
				"PrivateKey:  testP256PrivateKey,",
				"// reads the bearer secret: Authorization: Bearer, else",
				"set it: CLIENT_SECRET=<your-client-secret>",
				"note: token_type=bearer",
				"then run: export API_KEY=$API_KEY",
			},
		},
		{
			ID: "generic-high-entropy", Description: "high-entropy string near a secret keyword",
			Keywords: append([]string{"secret", "token", "passw", "credential", "auth"},
				append(joined([]string{"api", "access", "private"}, "key"), "api key", "access key", "private key")...),
			SecretGroup: 1,
			MinEntropy:  3.7, Keep: keepHighEntropy, Before: 8, After: 320,
			Pattern: (`(?i)\b(?:api[_ .-]?keys?|secrets?|tokens?|passw(?:or)?ds?|credentials?|access[_ .-]?keys?|private[_ .-]?keys?|auth)\b[^\n]{0,24}?[^A-Za-z0-9+/_-]([A-Za-z0-9+/_-][A-Za-z0-9+/_=-]{23,})(?:[^A-Za-z0-9+/_=-]|$)`),
			True: []string{
				"Here is the API key you asked for: " + fake(alnum, 32, 164),
				"the token is " + fake(b64url, 40, 165),
			},
			False: []string{
				"the token for authentication_middleware_handler_v2",
				"secret stored at src/components/TokenProvider/index.ts",
				"commit the token change in " + fake(hexLow, 40, 166),
				"tokens are counted per request in the usage_accounting_module",
				"PrivateKey = testRSAPSS2048PrivateKey",
			},
		},
	}
}
