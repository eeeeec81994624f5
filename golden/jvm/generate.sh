#!/usr/bin/env bash
# generate.sh OUT_ROOT [RELEASE...]: for each Kafka release (default: every one in releases.txt),
# resolves that release's jars with Maven, builds the generator against them and writes
# OUT_ROOT/kafka-<release>/ (see README.md). Exit 3 when Maven cannot resolve a release's jars
# (no Maven, no Java or Maven Central unreachable), 1 on any other failure.
# generate.sh --schemas OUT_DIR [RELEASE...]: writes only OUT_DIR/messages-<X.Y>.json, the release's
# message layouts that kafkalog's decoders read (Schemas.java; codec/kafkalog/internal/data/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
schemas_only=
if [ "${1:-}" = --schemas ]; then
  schemas_only=1
  shift
fi
out_root=$(mkdir -p "$1" && cd "$1" && pwd)
shift
if [ $# -eq 0 ]; then
  set -- $(grep -v '^#' "$here/releases.txt")
fi
for tool in java mvn; do
  command -v $tool >/dev/null 2>&1 || { echo "generate.sh: $tool is not on PATH" >&2; exit 3; }
done
mkdir -p "$here/target"
for release in "$@"; do
  build=$here/target/$release
  start=$(date +%s)
  if ! mvn -q -B -f "$here/pom.xml" -Dkafka.version="$release" dependency:resolve >"$here/target/$release.log" 2>&1; then
    cat "$here/target/$release.log" >&2
    rm -f "$here/target/$release.log"
    echo "generate.sh: Maven cannot resolve Kafka $release's jars" >&2
    exit 3
  fi
  rm -f "$here/target/$release.log"
  if ! mvn -q -B -f "$here/pom.xml" -Dkafka.version="$release" compile dependency:build-classpath \
      -Dmdep.outputFile="$build/classpath.txt" >"$here/target/$release.log" 2>&1; then
    cat "$here/target/$release.log" >&2
    exit 1
  fi
  rm -f "$here/target/$release.log"
  if [ -n "$schemas_only" ]; then
    java -cp "$build/classes:$(cat "$build/classpath.txt")" kafkalog.golden.Schemas \
      "$out_root/messages-${release%.*}.json" "$release" 2> >(grep -v '^SLF4J: ' >&2)
    continue
  fi
  dest=$out_root/kafka-$release
  rm -rf "$dest"
  java -cp "$build/classes:$(cat "$build/classpath.txt")" kafkalog.golden.Generate "$dest" 2> >(grep -v '^SLF4J: ' >&2)
  # the writer cases replayed by this release's log layer: golden/corpus/writer's and the generator's own
  java -cp "$build/classes:$(cat "$build/classpath.txt")" kafkalog.golden.WriterCases "$dest/writer" \
    "$here"/../corpus/writer/*/ "$here"/cases/*/ 2> >(grep -v '^SLF4J: ' >&2)
  echo "kafka-$release: $(( $(date +%s) - start )) s" >&2
done
