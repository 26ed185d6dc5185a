#!/usr/bin/env bash
# Builds the Windows loader fixtures of tests/it/loader_windows.rs into $1 with mingw (run on
# the Linux side by scripts/test-windows.sh: there is no compiler under Wine). The table
# here and FIXTURES in tests/it/support/loader_win.rs must agree.
set -euo pipefail
out=$1
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cc=${MINGW_CC:-x86_64-w64-mingw32-gcc}
rc=${MINGW_WINDRES:-x86_64-w64-mingw32-windres}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# name|source|defines|versioninfo (a,b,c,d or -)
while IFS='|' read -r name source defines vi; do
  objs=("$src/$source")
  if [[ $vi != - ]]; then
    printf '1 VERSIONINFO\nFILEVERSION %s\nPRODUCTVERSION %s\nBEGIN\nEND\n' "$vi" "$vi" > "$tmp/$name.rc"
    "$rc" "$tmp/$name.rc" -O coff -o "$tmp/$name.res.o"
    objs+=("$tmp/$name.res.o")
  fi
  # shellcheck disable=SC2086
  eval "set -- $defines"
  "$cc" -shared -O0 -o "$out/$name" "${objs[@]}" "$@"
done <<'TABLE'
disp9.dll|dispatcher.c|-DSUBLIB='"cudnn_graph64_9.dll"'|-
disp8.dll|dispatcher.c|-DSUBLIB='"cudnn_ops_infer64_8.dll"' -DZLIB|8,9,4,25
disp9x.dll|dispatcher.c|-DSUBLIB='"cudnn_ext64_9.dll"'|-
zlib64.dll|sublib.c|-DVERSION=1|1,2,13,0
sub9_95.dll|sublib.c|-DVERSION=90500 -DMARKER='"cudnn_version_9_5_0_50_34937467_e0"'|-
sub9_91.dll|sublib.c|-DVERSION=90100 -DMARKER='"cudnn_version_9_1_0_70_1_e0"'|-
sub8_894.dll|sublib.c|-DVERSION=8904|8,9,4,25
sub8_880.dll|sublib.c|-DVERSION=8800|8,8,0,121
TABLE
# consumer9.dll imports cudnn64_9.dll: link it against a dispatcher built under that name
# (the import names the DLL's own export-directory name).
"$cc" -shared -O0 -o "$tmp/cudnn64_9.dll" "$src/dispatcher.c" -DSUBLIB='"cudnn_graph64_9.dll"'
"$cc" -shared -O0 -o "$out/consumer9.dll" "$src/cudnn_consumer.c" "$tmp/cudnn64_9.dll"
"$cc" -O0 -municode -o "$out/oracle.exe" "$src/oracle.c" -lpsapi
# doctor --for (tests/it/doctor_for.rs): consumer.dll imports cublasLt64_12.dll, which is
# shipped only as cublaslt12.dll; consumer_app.exe imports consumer.dll.
"$cc" -shared -O0 -DCUBLASLT -o "$tmp/cublasLt64_12.dll" "$src/consumer.c"
cp "$tmp/cublasLt64_12.dll" "$out/cublaslt12.dll"
"$cc" -shared -O0 -o "$out/consumer.dll" "$src/consumer.c" "$tmp/cublasLt64_12.dll"
"$cc" -O0 -DAPP -o "$out/consumer_app.exe" "$src/consumer.c" "$out/consumer.dll"
echo "$out"
