//! Sharding a run by problem: `--shard I/N` keeps the problems whose id hashes to shard I.
//!
//! The hash is the first 8 bytes of SHA-256 of the problem id, big-endian, modulo N, so a problem
//! lands in the same shard on every machine and every release. I counts from 0 (a Kubernetes
//! indexed Job's `JOB_COMPLETION_INDEX`; with a 1-based Slurm array pass `$((SLURM_ARRAY_TASK_ID-1))`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// True when this shard owns the problem.
    pub fn contains(&self, problem_id: &str) -> bool {
        shard_of(problem_id, self.count) == self.index
    }
}

/// The shard (0..count) a problem id belongs to.
pub fn shard_of(problem_id: &str, count: u32) -> u32 {
    let digest = Sha256::digest(problem_id.as_bytes());
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(head) % count.max(1) as u64) as u32
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("shard {s:?} is not I/N with 0 ≤ I < N (for example 0/4)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!("1/4".parse(), Ok(Shard { index: 1, count: 4 }));
        for bad in ["4/4", "1", "a/2", "0/0", "-1/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn shards_partition_the_problems_stably() {
        let ids: Vec<String> = (0..200).map(|i| format!("p{i}")).collect();
        let mut sizes = [0; 3];
        for id in &ids {
            let owners: Vec<u32> = (0..3)
                .filter(|&i| Shard { index: i, count: 3 }.contains(id))
                .collect();
            assert_eq!(owners.len(), 1);
            sizes[owners[0] as usize] += 1;
        }
        assert!(sizes.iter().all(|&s| s > 40), "{sizes:?}");
        // Fixed forever: changing the hash would split resumed shard runs differently.
        assert_eq!(shard_of("AIME/1", 1000), 344);
        assert_eq!(shard_of("p0", 7), 3);
        assert_eq!(shard_of("x", 1), 0);
    }
}
