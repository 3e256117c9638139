#!/bin/sh
cat > /dev/null
cat <<'JSON'
{"summary":"Deployed.","key_learnings":["Deploy with DEPLOY_TOKEN=ghp_R7xQk2mN9pL4sT8vW3yZ6aB1cD5eF0gH2jK4 make deploy."],"errors":[],"solutions":[],"tags":["deploy"],"category":"general"}
JSON
