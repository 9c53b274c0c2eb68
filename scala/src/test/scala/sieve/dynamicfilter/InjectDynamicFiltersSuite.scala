package sieve.dynamicfilter

import java.nio.file.Files

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, EqualTo, GreaterThan, Literal}
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, JoinHint, LocalRelation, LogicalPlan}

import sieve.SieveSessionSuite

/** Where InjectDynamicFilters puts a DynamicFilter, on joins built by hand over file scans. */
class InjectDynamicFiltersSuite extends SieveSessionSuite {
  private lazy val dir = Files.createTempDirectory("sieve-inject").toFile

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.range(20000).selectExpr("CAST(id % 1000 AS INT) AS k", "id AS v", "CAST(id % 7 AS INT) AS a")
      .write.parquet(s"$dir/fact")
    spark.range(1000).selectExpr("CAST(id AS INT) AS k", "CAST(id % 10 AS INT) AS cat", "CAST(id % 7 AS INT) AS a")
      .write.parquet(s"$dir/dim")
    spark.range(20000).selectExpr("CAST(id % 1000 AS INT) AS k", "id AS v", "CAST(id % 7 AS INT) AS a")
      .write.partitionBy("a").parquet(s"$dir/fact_by_a")
  }

  private def scan(name: String): LogicalPlan = spark.read.parquet(s"$dir/$name").queryExecution.analyzed
  private def col(plan: LogicalPlan, name: String): Attribute = plan.output.find(_.name == name).get

  private lazy val fact = scan("fact")
  private lazy val dim = scan("dim")
  private lazy val filteredDim = Filter(EqualTo(col(dim, "cat"), Literal(3)), dim)

  private def join(left: LogicalPlan, right: LogicalPlan, joinType: JoinType, keys: String*): Join =
    Join(left, right, joinType,
      Some(keys.map(k => EqualTo(col(left, k), col(right, k)): org.apache.spark.sql.catalyst.expressions.Expression)
        .reduce(And)), JoinHint.NONE)

  /** Which side got the filter ("left", "right", or "none"), and its keys' names. */
  private def placement(plan: LogicalPlan): (String, Seq[String]) = {
    SparkSession.setActiveSession(spark)
    InjectDynamicFilters(plan) match {
      case Join(f: DynamicFilter, _, _, _, _) => ("left", f.keys.flatMap(_.references.map(_.name)))
      case Join(_, f: DynamicFilter, _, _, _) => ("right", f.keys.flatMap(_.references.map(_.name)))
      case other =>
        assert(other.collect { case f: DynamicFilter => f }.isEmpty, other.treeString)
        ("none", Nil)
    }
  }

  private def eager[T](body: => T): T = withConf("spark.sieve.dynamicFilter.minApplicationBytes" -> "0")(body)

  test("each join type: the side whose rows the join may drop") {
    eager {
      assert(placement(join(fact, filteredDim, Inner, "k")) === ("left", Seq("k")))
      assert(placement(join(filteredDim, fact, Inner, "k")) === ("right", Seq("k")), "inner: the larger side")
      assert(placement(join(fact, filteredDim, LeftSemi, "k")) === ("left", Seq("k")))
      assert(placement(join(filteredDim, fact, LeftOuter, "k")) === ("right", Seq("k")))
      assert(placement(join(fact, filteredDim, RightOuter, "k")) === ("left", Seq("k")))
      // preserved sides and anti joins keep every row of the scan: no filter can drop any
      assert(placement(join(fact, filteredDim, LeftOuter, "k"))._1 === "none")
      assert(placement(join(filteredDim, fact, RightOuter, "k"))._1 === "none")
      assert(placement(join(fact, filteredDim, FullOuter, "k"))._1 === "none")
      assert(placement(join(fact, filteredDim, LeftAnti, "k"))._1 === "none")
    }
  }

  test("composite keys") {
    eager {
      assert(placement(join(fact, filteredDim, Inner, "k", "a")) === ("left", Seq("k", "a")))
    }
  }

  test("where it must not fire") {
    eager {
      // no equi-key: a cross join or a non-equi condition
      assert(placement(Join(fact, filteredDim, Inner, None, JoinHint.NONE))._1 === "none")
      assert(placement(Join(fact, filteredDim, Inner,
        Some(GreaterThan(col(fact, "k"), col(filteredDim, "k"))), JoinHint.NONE))._1 === "none")
      // the application side is not a file scan
      val local = LocalRelation(col(fact, "k").withExprId(org.apache.spark.sql.catalyst.expressions.NamedExpression.newExprId))
      assert(placement(Join(local, filteredDim, LeftSemi,
        Some(EqualTo(local.output.head, col(filteredDim, "k"))), JoinHint.NONE))._1 === "none")
      // an unfiltered creation side of about the same size
      val other = scan("fact")
      assert(placement(join(fact, other, Inner, "k"))._1 === "none")
      // a partition-column key is dynamic partition pruning's, unless that is off
      val byA = scan("fact_by_a")
      assert(placement(join(byA, filteredDim, Inner, "a"))._1 === "none")
      withConf("spark.sql.optimizer.dynamicPartitionPruning.enabled" -> "false") {
        assert(placement(join(byA, filteredDim, Inner, "a"))._1 === "left")
      }
    }
    // the default minimum application-side size: this fact is far too small to pay
    assert(placement(join(fact, filteredDim, Inner, "k"))._1 === "none")
    withConf("spark.sieve.dynamicFilter.minApplicationBytes" -> "0", "spark.sieve.enabled" -> "false") {
      assert(placement(join(fact, filteredDim, Inner, "k"))._1 === "none")
    }
  }

  test("an unfiltered creation side qualifies when minSizeRatio times smaller") {
    eager {
      assert(placement(join(fact, dim, Inner, "k"))._1 === "left")
      withConf("spark.sieve.dynamicFilter.minSizeRatio" -> "1000000") {
        assert(placement(join(fact, dim, Inner, "k"))._1 === "none")
      }
    }
  }

  test("idempotent: a second run changes nothing") {
    eager {
      SparkSession.setActiveSession(spark)
      val once = InjectDynamicFilters(join(fact, filteredDim, Inner, "k"))
      assert(InjectDynamicFilters(once) eq once)
    }
  }
}
