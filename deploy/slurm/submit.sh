#!/bin/bash
# Submits a gpassk evaluation to Slurm: an array of GPASSK_SHARDS tasks (0..N-1, one shard each)
# and the merge job, which starts only when every task succeeded (afterok) and is cancelled if
# one fails (then rerun that shard and submit the merge again; see README.md).
#   GPASSK_CONFIG=eval.toml GPASSK_SHARDS=8 GPASSK_RESULTS=/shared/results deploy/slurm/submit.sh [sbatch options]
# sbatch options (--partition, --time, --account…) apply to both jobs. The jobs get this shell's
# environment (--export=ALL): export the API key variables before, never write them in a script.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${GPASSK_CONFIG:?set GPASSK_CONFIG to the config file (on the shared filesystem)}"
: "${GPASSK_RESULTS:?set GPASSK_RESULTS to the results folder (on the shared filesystem)}"
n=${GPASSK_SHARDS:?set GPASSK_SHARDS to the number of shards}
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "submit: GPASSK_SHARDS=\"$n\" is not a shard count" >&2; exit 2; }
((n >= 2)) || { echo "submit: GPASSK_SHARDS=$n: run a single shard as a plain gpassk run" >&2; exit 2; }
mkdir -p "$GPASSK_RESULTS"

array=$(sbatch --parsable --array="0-$((n - 1))" --export=ALL "$@" "$here/gpassk-shards.sbatch")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes --export=ALL \
    "$@" "$here/gpassk-merge.sbatch")
merge=${merge%%;*}
echo "shards job: $array (array 0-$((n - 1)))"
echo "merge job: $merge (after every shard succeeds)"
