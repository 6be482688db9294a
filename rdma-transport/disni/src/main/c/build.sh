#!/usr/bin/env bash
# Builds Reverb's native half of DiSNi 2.1 (libreverb-disni.so: the JNI functions of
# com.ibm.disni.verbs.impl.NativeDispatcher over libibverbs and librdmacm) into
#   <classes>/META-INF/native/linux-<arch>/libreverb-disni.so
# so that it ships inside reverb-transport-rdma. Run by the module's pom (exec-maven-plugin) in every build:
#   build.sh <classes dir> <build dir> <JDK home>
#
# Needs gcc, the JDK's jni.h and rdma-core's headers (Debian: libibverbs-dev librdmacm-dev; RHEL:
# rdma-core-devel). When the headers are missing and this runs as root with apt-get, it installs the two Debian
# packages itself (CI); otherwise it fails naming them. Only the host architecture is built: a cross build for
# aarch64 would need aarch64 rdma-core libraries as well as a cross compiler (see RDMA-HARDWARE.md).
# Off Linux there is no RDMA stack to build against: it says so and builds nothing (rdma:// is then unavailable).
set -euo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 <classes dir> <build dir> <JDK home>" >&2
    exit 64
fi
classes=$1
build=$2
jdk=$3
src=$(cd "$(dirname "$0")" && pwd)
packages="libibverbs-dev librdmacm-dev"

if [ "$(uname -s)" != Linux ]; then
    echo "[reverb-native] $(uname -s) is not Linux: libreverb-disni is not built (rdma:// needs Linux)"
    exit 0
fi
case "$(uname -m)" in
    x86_64|amd64) arch=x86_64 ;;
    aarch64|arm64) arch=aarch64 ;;
    *) echo "[reverb-native] ERROR: unsupported architecture $(uname -m) (x86_64 and aarch64 are)" >&2; exit 1 ;;
esac

cc=${CC:-gcc}
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "[reverb-native] ERROR: no C compiler ($cc): install gcc (Debian: apt-get install gcc)" >&2
    exit 1
fi
if [ ! -f "$jdk/include/jni.h" ]; then
    echo "[reverb-native] ERROR: $jdk/include/jni.h is missing: build with a JDK, not a JRE" \
        "(Debian: openjdk-17-jdk-headless)" >&2
    exit 1
fi

mkdir -p "$build"
probe=$build/probe.c
printf '#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\nint main(void){return rdma_create_event_channel()==0 && ibv_get_device_list(0)==0;}\n' > "$probe"
headers_ok() {
    "$cc" -o "$build/probe" "$probe" -libverbs -lrdmacm >"$build/probe.log" 2>&1
}
if ! headers_ok; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "[reverb-native] rdma-core headers missing: installing $packages"
        log=$build/apt.log
        if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages >"$log" 2>&1; then
            DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$log" 2>&1 || true
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages >>"$log" 2>&1 ||
                { tail -20 "$log" >&2; }
        fi
    fi
    if ! headers_ok; then
        cat "$build/probe.log" >&2
        echo "[reverb-native] ERROR: cannot build libreverb-disni: rdma-core's headers and libraries are missing." \
            "Install them (Debian/Ubuntu: sudo apt-get install $packages; RHEL/Fedora: sudo dnf install" \
            "rdma-core-devel) and build again." >&2
        exit 1
    fi
fi

out=$classes/META-INF/native/linux-$arch
mkdir -p "$out"
lib=$out/libreverb-disni.so
# Only the JNI entry points are exported (JNIEXPORT); everything else is hidden.
# Reproducible (bin/release-check --reproducible): no -g, so no paths; -ffile-prefix-map keeps the checkout's path
# out should a __FILE__ (assert) ever appear; the GNU build-id is a hash of the contents, so it is stable too.
"$cc" -std=gnu11 -Wall -Wextra -Werror -O2 -fPIC -fvisibility=hidden -D_FORTIFY_SOURCE=2 \
    -fstack-protector-strong -ffile-prefix-map="$src"=. -I"$jdk/include" -I"$jdk/include/linux" \
    -shared -Wl,-soname,libreverb-disni.so -Wl,-z,relro,-z,now -Wl,--no-undefined \
    -o "$lib.tmp" "$src"/common.c "$src"/sizes.c "$src"/cm.c "$src"/verbs.c -libverbs -lrdmacm
mv -f "$lib.tmp" "$lib"
echo "[reverb-native] built $lib"
