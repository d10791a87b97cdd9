# Shared by scripts/test and scripts/quickstart (sourced, not run).
step() { printf '\n==> %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  step "installing Debian packages: $*"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}
# The browser demo and suites drive a real headless Chromium (issue 8).
ensure_chromium() {
  [ -n "${JEVGATE_CHROMIUM:-}" ] || [ -x /usr/bin/chromium ] || apt_install chromium
}
