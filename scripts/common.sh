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
# The shared-store tests run a throw-away PostgreSQL 15 cluster (issue 23, scripts/pg-cluster).
# Debian's package would create and start a "main" cluster of its own: told not to first, so
# installing leaves no service running.
# The computer-helper tests (issue 25) run gnome-calculator, mousepad and Debian's chromium (as a desktop
# application, tests/computer_chromium.rs; on PATH even when JEVGATE_CHROMIUM names another
# browser for the browser suites) on a throw-away desktop (scripts/desktop: Xvfb, a session
# D-Bus, the AT-SPI bus of at-spi2-core).
ensure_desktop() {
  if have Xvfb && have dbus-daemon && have gnome-calculator && have mousepad && have xclip \
    && have chromium && [ -x /usr/libexec/at-spi-bus-launcher ]; then
    return 0
  fi
  # mousepad: the GTK 3 text editor of tests/task_editor.rs (its menu bar over AT-SPI); xclip
  # reads the X clipboard there.
  apt_install xvfb dbus dbus-x11 at-spi2-core gnome-calculator mousepad xclip chromium
}
ensure_postgresql() {
  [ -x /usr/lib/postgresql/15/bin/initdb ] && return 0
  as_root mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" | as_root tee /etc/postgresql-common/createcluster.d/jevgate.conf >/dev/null
  apt_install postgresql-15 postgresql-client-15
}
