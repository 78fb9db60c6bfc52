# Sourced by the bench scripts (from the checkout's root): sets PY and, where diffill is not installed (a GPU
# machine with its own python3 with torch and triton, no network), makes the checkout importable as diffill.* the way
# pyproject.toml's package-dir maps it, with the wheels carried in .whl (bench/device_prep.sh fetches them).
PY=${PYTHON:-python3}
if ! "$PY" -c "import diffill.model" 2>/dev/null; then
    _site=$(mktemp -d)
    if compgen -G ".whl/*.whl" >/dev/null; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$_site" .whl/*.whl
    fi
    mkdir -p "$_site/diffill"
    for _part in lsp infill model kernels training bench; do ln -s "$PWD/$_part" "$_site/diffill/$_part"; done
    export PYTHONPATH="$_site${PYTHONPATH:+:$PYTHONPATH}"
fi
