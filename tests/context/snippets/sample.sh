#!/usr/bin/env bash
set -euo pipefail

log() {
  echo "[$(date)] $*"
}

function build {
  log "building"
  make all
}

build
