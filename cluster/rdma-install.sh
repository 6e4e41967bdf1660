#!/bin/sh
set -eux
# The gIB NCCL plugin installer's init container (container-engine-accelerators
# gpudirect-rdma/nccl-rdma-installer*.yaml at 992db812): it installs the plugin and copies it into
# the host directories the GPU pods mount. POSIX sh, as upstream runs it: the image promises no
# bash, so there is no pipefail (and no pipe to need it). INSTALL_NCCL=true also installs NCCL
# itself (the Autopilot manifest does; the Standard one no longer does, upstream commit 2da1c92f).
if [ "${INSTALL_NCCL:-false}" = true ]; then
  /scripts/container_entry.sh install --install-nccl
else
  /scripts/container_entry.sh install
fi
cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64
cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib
echo "installation finishes"
