#!/usr/bin/env bash
# build.sh — builds a minimal FFmpeg (Debian bookworm's 5.1 source) with the nxe_sr filter,
# linked against the libnxe_sr of the installed nxe Python package; leaves build/ffmpeg/ffmpeg.
# Reruns rebuild only what changed. Apart from installing the build tools and adding a deb-src
# entry where apt has none, it writes only under the repo's build/ (or the folders given below).
#
#   ffmpeg-filter/build.sh                  # from anywhere; paths are relative to the repo root
#   NXE_FFMPEG_SRC=dir NXE_FFMPEG_BUILD=dir ffmpeg-filter/build.sh
#   NXE_FFMPEG_BUILD=build/ffmpeg-asan NXE_FFMPEG_CONFIGURE_FLAGS=--toolchain=gcc-asan ffmpeg-filter/build.sh
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

repo=$(cd "$(dirname "$0")/.." && pwd)
filter_source="$repo/ffmpeg-filter/vf_nxe_sr.c"
src=${NXE_FFMPEG_SRC:-$repo/build/ffmpeg-src}
out=${NXE_FFMPEG_BUILD:-$repo/build/ffmpeg}
PYTHON=${PYTHON:-python3}
jobs=$(nproc)

apt_updated=0
apt_update() {
    if ((!apt_updated)); then
        apt-get update -q </dev/null
        apt_updated=1
    fi
}

# apt-get source needs a deb-src entry; derive one from the binary entries of the Debian
# archive this machine already uses, so the source matches the installed release.
add_debian_sources() {
    if grep -Eqs '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list ||
        grep -Eqs '^Types:.*deb-src' /etc/apt/sources.list.d/*.sources; then
        return
    fi
    if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
        sed -E 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
            >/etc/apt/sources.list.d/debian-src.sources
    elif grep -Eqs '^[[:space:]]*deb[[:space:]].*debian' /etc/apt/sources.list; then
        grep -E '^[[:space:]]*deb[[:space:]].*debian' /etc/apt/sources.list |
            sed -E 's/^[[:space:]]*deb[[:space:]]/deb-src /' >/etc/apt/sources.list.d/debian-src.list
    else
        echo "build.sh: no Debian archive in /etc/apt/sources.list{,.d/debian.sources}" >&2
        exit 1
    fi
    apt_updated=0
}

# gcc, make and nasm build FFmpeg; pkg-config finds nxe_sr; dpkg-dev unpacks the source
# package (dpkg-source) and xz-utils its tarballs.
install_tools() {
    local missing=() tool
    for tool in gcc:gcc make:make nasm:nasm pkg-config:pkg-config dpkg-source:dpkg-dev xz:xz-utils; do
        command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
    done
    if ((${#missing[@]})); then
        apt_update
        apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
    fi
}

# Debian's source package with its patches applied, unpacked once into $src.
fetch_source() {
    [[ -f "$src/configure" && -f "$src/libavfilter/allfilters.c" ]] && return
    add_debian_sources
    apt_update
    local download="$src.download"
    rm -rf "$download"
    mkdir -p "$download"
    (cd "$download" && apt-get source -q ffmpeg </dev/null)
    local unpacked
    unpacked=$(find "$download" -mindepth 1 -maxdepth 1 -type d -name 'ffmpeg-*' | head -n 1)
    if [[ -z "$unpacked" ]]; then
        echo "build.sh: apt-get source ffmpeg left no ffmpeg-* folder in $download" >&2
        exit 1
    fi
    rm -rf "$src"
    mv "$unpacked" "$src"
    rm -rf "$download"
}

# Copies only on change, so make sees a new timestamp only when the filter changed.
install_filter_source() {
    cmp -s "$filter_source" "$src/libavfilter/vf_nxe_sr.c" ||
        cp "$filter_source" "$src/libavfilter/vf_nxe_sr.c"
}

# Registers the filter and the libnxe_sr external library (--enable-libnxe-sr). libnxe_sr is
# Apache-2.0, which goes with the (L)GPL version 3 only, so it joins the version3 list as
# libvo_amrwbenc does. Each edit is guarded by a check for its own line, so a rerun leaves the
# files untouched.
register_filter() {
    local allfilters="$src/libavfilter/allfilters.c" makefile="$src/libavfilter/Makefile"
    local configure="$src/configure"
    grep -q 'ff_vf_nxe_sr;' "$allfilters" ||
        sed -i '/^extern const AVFilter ff_vf_null;/a extern const AVFilter ff_vf_nxe_sr;' "$allfilters"
    # shellcheck disable=SC2016 # $(...) here is make's, written as it is
    grep -q 'CONFIG_NXE_SR_FILTER' "$makefile" ||
        sed -i '/^OBJS-\$(CONFIG_NULL_FILTER)/a OBJS-$(CONFIG_NXE_SR_FILTER)                += vf_nxe_sr.o' \
            "$makefile"
    if ! grep -q 'libnxe_sr' "$configure"; then
        sed -i \
            -e '/^    liblensfun$/a \    libnxe_sr' \
            -e '/^  --enable-libmysofa /a \  --enable-libnxe-sr       enable super-resolution through libnxe_sr [no]' \
            -e '/^nnedi_filter_deps=/i nxe_sr_filter_deps="libnxe_sr"' \
            -e '/^enabled libmysofa /i enabled libnxe_sr         \&\& require_pkg_config libnxe_sr nxe_sr nxe/nxe_sr.h nxe_sr_open' \
            "$configure"
    fi
    local check
    for check in 'ff_vf_nxe_sr;:'"$allfilters" 'CONFIG_NXE_SR_FILTER:'"$makefile" \
        '^    libnxe_sr$:'"$configure" '^nxe_sr_filter_deps=:'"$configure" \
        '^enabled libnxe_sr :'"$configure" '--enable-libnxe-sr :'"$configure"; do
        if ! grep -Eq -- "${check%%:*}" "${check#*:}"; then
            echo "build.sh: could not register nxe_sr in ${check#*:} (no line matching ${check%%:*})" >&2
            exit 1
        fi
    done
}

# Just what the tests and benchmarks use: the lavfi input with testsrc2, the nxe_sr filter
# and the format plumbing around it, raw and y4m files through files or pipes.
configure_ffmpeg() {
    local pkgconfig_path libdir
    pkgconfig_path=$("$PYTHON" -m nxe config --pkgconfig-path)
    export PKG_CONFIG_PATH="$pkgconfig_path${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    if ! pkg-config --exists nxe_sr; then
        echo "build.sh: pkg-config finds no nxe_sr in $pkgconfig_path; install the package (pip install .)" >&2
        exit 1
    fi
    libdir=$(realpath "$(pkg-config --variable=libdir nxe_sr)")
    # Audio: nxe.audio decodes the containers soundfile does not read (MP4/M4A, Matroska/WebM,
    # MP3, Ogg Opus) to float WAV at the model's rate (aresample).
    # shellcheck disable=SC2054 # commas separate FFmpeg's component names
    local args=(
        --disable-everything --disable-autodetect --disable-doc --disable-network
        --disable-ffplay --disable-ffprobe --disable-postproc
        --enable-version3 --enable-libnxe-sr
        --enable-filter=nxe_sr,testsrc2,format,scale,null,setparams,split,trim,fps
        --enable-filter=aresample,aformat,anull
        --enable-indev=lavfi
        --enable-protocol=file,pipe
        --enable-demuxer=rawvideo,yuv4mpegpipe,matroska,nut,avi
        --enable-demuxer=wav,mov,mp3,ogg,flac,aac
        --enable-muxer=rawvideo,yuv4mpegpipe,null,matroska,nut,avi
        --enable-muxer=wav
        --enable-decoder=rawvideo,wrapped_avframe
        --enable-decoder=pcm_s16le,pcm_s24le,pcm_s32le,pcm_f32le,flac,vorbis,opus,mp3float,aac
        --enable-parser=flac,vorbis,opus,mpegaudio,aac
        --enable-encoder=rawvideo,wrapped_avframe
        --enable-encoder=pcm_f32le
        --extra-ldflags="-Wl,-rpath,$libdir"
    )
    local extra
    read -ra extra <<<"${NXE_FFMPEG_CONFIGURE_FLAGS:-}"
    args+=("${extra[@]}")
    # configure writes config.h and config.mak only when they change, yet takes a while itself:
    # it runs again only for new arguments, a new library location or an edited script.
    local stamp="$out/nxe-configure.args" wanted
    wanted=$(printf '%s\n' "${args[@]}" "$(cksum <"$src/configure")" "$(pkg-config --cflags --libs nxe_sr)")
    if [[ -f "$out/ffbuild/config.mak" && -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
        return
    fi
    mkdir -p "$out"
    echo "build.sh: configuring FFmpeg in $out" >&2
    if ! (cd "$out" && "$src/configure" "${args[@]}" >configure.out); then
        tail -n 30 "$out/ffbuild/config.log" >&2 || true
        echo "build.sh: FFmpeg's configure failed; see $out/ffbuild/config.log" >&2
        exit 1
    fi
    printf '%s\n' "$wanted" >"$stamp"
}

install_tools
fetch_source
install_filter_source
register_filter
configure_ffmpeg
echo "build.sh: building $out/ffmpeg" >&2
make -C "$out" -j"$jobs" ffmpeg >"$out/make.out" 2>&1 || {
    tail -n 40 "$out/make.out" >&2
    echo "build.sh: make failed; see $out/make.out" >&2
    exit 1
}
echo "$out/ffmpeg"
