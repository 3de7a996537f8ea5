# python_of X.Y: the path of a working CPython X.Y (pythonX.Y on PATH, else pyenv's),
# or nothing. Sourced by .ci/run and .ci/build_wheels.sh.
python_of() {
    local py
    py="$(command -v "python$1" || true)"
    if [ -n "$py" ] && "$py" -c '' 2>/dev/null; then
        echo "$py"
    elif command -v pyenv >/dev/null; then
        py="$(ls -d "$(pyenv root)"/versions/"$1".*/bin/python 2>/dev/null | sort -V | tail -1)"
        if [ -n "$py" ] && "$py" -c '' 2>/dev/null; then echo "$py"; fi
    fi
}
