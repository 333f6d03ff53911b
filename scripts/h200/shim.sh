# Sourced by the H200 scripts that put the CUDA shim (cuda-shim.c) in front of the real driver, once $here (this
# folder) and $work (their scratch folder) are set: builds the shim into $work/cuda-shim.so (exit 1 when it does
# not build) and sets real (MAPPED_REG_SHIM_REAL: a CUDA library to use instead of libcuda.so.1), driver (the
# variables of a run on the real driver) and shim (those of a run through the shim).
cc -shared -fPIC -O2 -o "$work/cuda-shim.so" "$here/cuda-shim.c" -ldl || { echo "$(basename "$0"): the shim did not build" >&2; exit 1; }
real=${MAPPED_REG_SHIM_REAL:-}
driver=()
[[ -n $real ]] && driver=(MAPPED_REG_CUDA_LIBRARY="$real")
shim=(MAPPED_REG_CUDA_LIBRARY="$work/cuda-shim.so" ${real:+MAPPED_REG_SHIM_REAL="$real"})
