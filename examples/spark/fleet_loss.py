"""Per-QP loss across a fleet of captures, with Spark and rocescope (interfaces.md §10).

Spark spreads the capture files over its executors; each runs `rocescope analyze --each -f
parquet` on its share, writing one Hive partition per capture (`OUT/capture=NAME/`) into the
shared output directory. The job then reads the partitions back as one dataset and sums, per
queue pair (source, destination, destination QP), the PSNs lost in the network and those the
captures only missed, over every capture that saw the QP.

    python3 fleet_loss.py --rocescope PATH --out DIR [--master local[2]] [--shares N] CAPTURE...

Prints one JSON line per QP that lost or missed anything, worst first:
    {"src": ..., "dst": ..., "destqp": ..., "lost": N, "not_captured": N, "captures": [...]}
and writes the same table as Parquet to DIR/_fleet_loss/. In local mode (one machine) the
executors are threads of this process and the output directory is a local one; on a cluster,
give a directory every executor can write (a shared file system) and rocescope on every node.
"""

import argparse
import json
import os
import subprocess

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def analyze_share(rocescope, out):
    """The function each executor runs on its share of the capture files."""

    def run(captures):
        captures = list(captures)
        if captures:
            # a capture that cannot be read is named on stderr; the others are still written
            subprocess.run(
                [rocescope, "-q", "analyze", "--each", "-f", "parquet", "-o", out, *captures],
                capture_output=True,
            )
        # (capture, written): written when its partition holds the flow table
        return [
            (c, os.path.exists(os.path.join(out, f"capture={os.path.basename(c)}", "flows.parquet")))
            for c in captures
        ]

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rocescope", default="rocescope", help="the rocescope binary")
    parser.add_argument("--out", required=True, help="the dataset directory (Hive partitions)")
    parser.add_argument("--master", default="local[2]", help="Spark master (local mode by default)")
    parser.add_argument("--shares", type=int, default=0, help="shares of the captures (default: one per core)")
    parser.add_argument("captures", nargs="+")
    args = parser.parse_args()

    spark = (
        SparkSession.builder.master(args.master)
        .appName("rocescope-fleet-loss")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    sc = spark.sparkContext
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    captures = [os.path.abspath(c) for c in args.captures]
    shares = args.shares or sc.defaultParallelism

    results = (
        sc.parallelize(captures, min(shares, len(captures)))
        .mapPartitions(analyze_share(os.path.abspath(args.rocescope), out))
        .collect()
    )
    failed = [c for c, written in results if not written]
    for c in failed:
        print(json.dumps({"capture": c, "error": "rocescope could not analyze it"}))

    flows = spark.read.option("basePath", out).parquet(os.path.join(out, "capture=*", "flows.parquet"))
    per_qp = (
        flows.groupBy("src", "dst", "destqp")
        .agg(
            F.sum("lost").alias("lost"),
            F.sum("not_captured").alias("not_captured"),
            F.sort_array(F.collect_set("capture")).alias("captures"),
        )
        .where((F.col("lost") > 0) | (F.col("not_captured") > 0))
        .orderBy(F.desc("lost"), F.desc("not_captured"), "src", "dst", "destqp")
    )
    per_qp.write.mode("overwrite").parquet(os.path.join(out, "_fleet_loss"))
    for row in per_qp.collect():
        print(json.dumps(row.asDict()))
    spark.stop()
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
