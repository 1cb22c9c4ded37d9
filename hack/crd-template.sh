#!/usr/bin/env bash
# Turns a CRD manifest (stdin) into a template of the lathe-crd chart (stdout): the chart's
# additionalAnnotations go into metadata.annotations. make generate runs it.
set -euo pipefail
awk '{ print } /^  annotations:$/ && !done { print "    {{- with .Values.additionalAnnotations }}"; print "    {{- toYaml . | nindent 4 }}"; print "    {{- end }}"; done = 1 }'
