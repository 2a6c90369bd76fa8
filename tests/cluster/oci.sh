# Sourced: oci_archive OUT REF ROOTFS ENTRYPOINT USER writes a one-layer
# OCI image archive (oci-layout, index.json, blobs/sha256) of the folder
# ROOTFS, named REF for `ctr images import`, reproducibly (sorted, owned by
# 0:0, every time 0). No registry or image builder is needed.
oci_archive() {
  local out=$1 ref=$2 rootfs=$3 entrypoint=$4 user=$5 w
  w=$(mktemp -d)
  mkdir -p "$w/blobs/sha256"
  # blob FILE: moves FILE into blobs/ under its digest; prints "digest size".
  blob() {
    local d s
    d=$(sha256sum "$1" | cut -d' ' -f1)
    s=$(stat -c %s "$1")
    mv "$1" "$w/blobs/sha256/$d"
    echo "$d $s"
  }
  local layer config manifest
  tar -C "$rootfs" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
    -cf "$w/layer" .
  read -r -a layer <<<"$(blob "$w/layer")"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["%s"],"User":"%s"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entrypoint" "$user" "${layer[0]}" >"$w/config"
  read -r -a config <<<"$(blob "$w/config")"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "${config[0]}" "${config[1]}" "${layer[0]}" "${layer[1]}" >"$w/manifest"
  read -r -a manifest <<<"$(blob "$w/manifest")"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "${manifest[0]}" "${manifest[1]}" "$ref" "${ref##*:}" >"$w/index.json"
  tar -C "$w" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
    -cf "$out" oci-layout index.json blobs
  rm -rf "$w"
}
