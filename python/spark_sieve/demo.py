"""The demo job: `dev/demo` (or `python -m spark_sieve.demo`).

Starts a local session with spark-sieve, shows what the extension is and what it does on a small
generated data set. It grows with each feature.
"""

import time

from pyspark.sql import SparkSession

import spark_sieve as sieve


def _timed(df):
    start = time.perf_counter()
    rows = df.collect()
    return rows, time.perf_counter() - start


def main():
    builder = (SparkSession.builder.master("local[2]").appName("spark-sieve demo")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4"))
    spark = sieve.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        print(f"spark-sieve {sieve.__version__} — a Spark SQL extension for filter-heavy queries")
        print(f"  jar: {sieve.jar_path()}")
        status = sieve.status(spark)
        print(f"  Spark {status['runningSpark']} (jar built for {status['builtForSpark']}), "
              f"extension registered: {status['registered']}")
        print("  settings in force:")
        for key in sorted(k for k in status if k.startswith("spark.sieve.")):
            print(f"    {key} = {status[key]}")

        cars = spark.range(0, 200_000).selectExpr(
            "id", "element_at(array('red','blue','green','black'), int(id % 4) + 1) AS color",
            "concat('brand', id % 50) AS brand", "concat('region', id % 7) AS region")
        query = cars.where("color = 'red' AND region IN ('region1', 'region3')").groupBy("brand").count()
        rows, seconds = _timed(query)
        print(f"\nA query over {cars.count():,} generated cars: {len(rows)} brands in {seconds:.2f} s.")

        print("\nWhat it does with a mistyped setting: spark.sieve.enabld=false")
        spark.conf.set("spark.sieve.enabld", "false")
        try:
            sieve.status(spark)
        except sieve.ConfigError as e:
            print(f"  ConfigError: {e}")
        finally:
            spark.conf.unset("spark.sieve.enabld")

        print("\nBulk filters and dynamic filters are not built yet (issues 3 and 4); this demo will show "
              "them with timings against vanilla Spark when they land.")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
