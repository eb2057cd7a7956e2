#!/bin/bash
# Builds bench/remote/pack/bundle.tar.xz: ipu-exec (the ELF copied from build/), Open MPI
# 4.1's mpirun/orted/ompi_info, their MCA plugins, help files and config,
# PMIx's plugins, UCX's transport modules, hwloc's plugins, and the ldd
# closure of all of them except glibc's own libraries, under root/:
#   root/bin  root/lib (flat)  root/lib/ucx  root/lib/hwloc
#   root/lib/openmpi/lib/openmpi3  root/share/openmpi  root/etc/openmpi
#   root/pmix2/{lib/pmix,share}
# Usage: bench/remote/pack.sh [IPU_EXEC_ELF]   (default build/ipu-exec)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
exe=${1:-$repo/build/ipu-exec}
dev=$here/pack
mkdir -p "$dev"
L=/usr/lib/x86_64-linux-gnu
stage=$(mktemp -d /tmp/ipu-bundle.XXXXXX)
trap 'rm -rf "$stage"' EXIT
R=$stage/root
mkdir -p "$R/bin" "$R/lib/ucx" "$R/lib/hwloc" "$R/lib/openmpi/lib/openmpi3" \
         "$R/share" "$R/etc" "$R/pmix2/lib/pmix" "$R/pmix2/share"
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
is_elf "$exe" || { echo "pack.sh: $exe is not an ELF (libtool wrapper? take .libs/)" >&2; exit 1; }
install -m755 "$exe" "$R/bin/ipu-exec"
for b in orterun orted ompi_info; do install -m755 "/usr/bin/$b" "$R/bin/$b"; done
ln -s orterun "$R/bin/mpirun"; ln -s orterun "$R/bin/mpiexec"
cp -a "$L"/openmpi/lib/openmpi3/. "$R/lib/openmpi/lib/openmpi3/"
cp -a "$L"/openmpi/lib/ompi_monitoring_prof.so "$R/lib/openmpi/lib/"
cp -a /usr/share/openmpi "$R/share/"
cp -a /etc/openmpi "$R/etc/"
cp -a "$L"/pmix2/lib/pmix/. "$R/pmix2/lib/pmix/"
cp -a "$L"/pmix2/share/. "$R/pmix2/share/"
cp -a "$L"/ucx/. "$R/lib/ucx/"
rm -f "$R"/lib/ucx/*.a "$R"/lib/ucx/*.la
# hwloc: pci and opencl (xml_libxml would pull in ICU, gl X11)
for p in hwloc_pci.so hwloc_opencl.so; do [ -e "$L/hwloc/$p" ] && cp -a "$L/hwloc/$p" "$R/lib/hwloc/"; done

glibc='^(libc|libm|libmvec|ld-linux-x86-64|libpthread|libdl|librt|libutil|libresolv|libanl|libnsl|libBrokenLocale|libthread_db|libnss_[a-z]+|libc_malloc_debug)\.so'
# The closure: ldd of every ELF in the tree (binaries and plugins), until no new library.
declare -A have
while :; do
    new=0
    while IFS= read -r f; do
        is_elf "$f" || continue
        if ldd "$f" 2>/dev/null | grep -q 'not found'; then
            echo "pack.sh: $f: $(ldd "$f" | grep 'not found' | head -n 1 | sed 's/^[[:space:]]*//')" >&2
            exit 1
        fi
        while read -r name path; do
            [[ $name =~ $glibc ]] && continue
            [ -n "${have[$name]:-}" ] && continue
            [ -f "$path" ] || { echo "pack.sh: $f: $name not found" >&2; exit 1; }
            cp -L "$path" "$R/lib/$name"; have[$name]=$path; new=1
        done < <(ldd "$f" 2>/dev/null | sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) .*/\1 \2/p')
    done < <(find "$R" -type f \( -name '*.so*' -o -path "$R/bin/*" \))
    [ $new -eq 0 ] && break
done
printf '%s\n' "${!have[@]}" | sort > "$R/MANIFEST.libs"
for n in $(sort <<<"$(printf '%s\n' "${!have[@]}")"); do echo "$n ${have[$n]}"; done > "$R/MANIFEST.sources"
(cd "$R" && find . -type f -o -type l | sort) > "$stage/list"
{
    echo "ipu-exec: sha256 $(sha256sum "$exe" | cut -c1-16), built $(date -u -r "$exe" +%FT%TZ), from $exe"
    echo "bundled $(date -u +%FT%TZ) on $(. /etc/os-release; echo "$PRETTY_NAME"); repo HEAD $(git -C "$repo" rev-parse --short HEAD 2>/dev/null), $(git -C "$repo" status --short -- src 2>/dev/null | wc -l) files of src/ changed at bundling"
} > "$R/BUNDLE_INFO"
tar -C "$stage" -cf - root | xz -T2 -9 > "$dev/bundle.tar.xz.tmp"
mv "$dev/bundle.tar.xz.tmp" "$dev/bundle.tar.xz"
echo "libraries: ${#have[@]}; files: $(wc -l < "$stage/list"); unpacked: $(du -sh "$R" | cut -f1); bundle: $(du -h "$dev/bundle.tar.xz" | cut -f1)"
