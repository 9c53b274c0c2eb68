package sieve.config

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Paths

import org.apache.spark.sql.internal.SQLConf
import org.scalatest.funsuite.AnyFunSuite

import sieve.errors.SieveConfigException

class ConfigDocsSuite extends AnyFunSuite {

  test("README's and docs/tuning.md's config tables are the ones generated from SieveConf (run dev/gen-config-docs)") {
    ConfigDocs.Tables.foreach { t =>
      assert(ConfigDocs.read(Paths.get("."), t).contains(t.block),
        s"${t.file}'s ${t.marker} is out of date: run dev/gen-config-docs and commit ${t.file}")
    }
  }

  test("README lists the public settings only, docs/tuning.md the internal ones") {
    assert(SieveConf.all.count(e => !e.internal) <= 8)
    assert(!ConfigDocs.Public.block.contains("spark.sieve.testing."))
    assert(ConfigDocs.Tuning.block.contains("spark.sieve.testing.placeEveryFilter"))
  }

  test("every setting is declared once, under spark.sieve., with a doc") {
    val keys = SieveConf.all.map(_.key)
    assert(keys.distinct === keys)
    SieveConf.all.foreach { e =>
      assert(e.key.startsWith(SieveConf.Prefix))
      assert(e.doc.trim.length > 20, s"${e.key} needs a doc string")
    }
  }

  test("typed parsing: booleans, numbers with bounds, choices") {
    val conf = new SQLConf
    val flag = ConfigEntry.boolean("spark.sieve.test.flag", default = true, "a test flag, not declared")
    assert(flag.get(conf))
    conf.setConfString(flag.key, " FALSE ")
    assert(!flag.get(conf))
    val ratio = ConfigEntry.double("spark.sieve.test.ratio", 0.5, "a test ratio", 0.0, 1.0)
    conf.setConfString(ratio.key, "1.5")
    assert(intercept[SieveConfigException](ratio.get(conf)).getMessage ===
      "spark.sieve.test.ratio: 1.5 is outside [0.0, 1.0]")
    val size = ConfigEntry.long("spark.sieve.test.size", 10L, "a test size", min = 1L)
    conf.setConfString(size.key, "ten")
    assert(intercept[SieveConfigException](size.get(conf)).getMessage ===
      "spark.sieve.test.size: 'ten' is not a whole number")
    val model = ConfigEntry.oneOf("spark.sieve.test.model", "seed", Seq("seed", "stats"), "a test choice")
    conf.setConfString(model.key, "Stats")
    assert(model.get(conf) === "stats")
    conf.setConfString(model.key, "best")
    assert(intercept[SieveConfigException](model.get(conf)).getMessage ===
      "spark.sieve.test.model: 'best' is not one of seed, stats")
  }
}
