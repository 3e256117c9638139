#!/bin/sh
# Writes the prompt it got to $DISTILL_PROMPT_OUT and its working directory after it, then answers.
cat > "$DISTILL_PROMPT_OUT"
pwd >> "$DISTILL_PROMPT_OUT"
echo '{"summary":"s","key_learnings":[],"errors":[],"solutions":[],"tags":[],"category":"general"}'
