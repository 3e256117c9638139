#!/bin/sh
cat > /dev/null
sleep 30 &
wait
