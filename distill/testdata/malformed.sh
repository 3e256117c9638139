#!/bin/sh
cat > /dev/null
echo 'Sure! Here is what I learned: the cache needed a mutex.'
