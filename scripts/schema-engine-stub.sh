#!/bin/sh
echo "schema-engine is not available offline" >&2
exit 1
