package sieve.formats

import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/** A Delta file's bounds on a key column from its log statistics (path, numRecords, min, max, nullCount). */
class DeltaFileBoundsSuite extends AnyFunSuite {
  private def bounds(min: Any, max: Any, nulls: Any, records: Any = 10L) =
    DeltaFileBounds.bounds(Row("a.parquet", records, min, max, nulls), 2)

  test("integral and date bounds as longs (a date's in days)") {
    assert(bounds(100L, 140L, 0L) === Some(FileBounds(100, 140, hasValues = true, rows = 10)))
    assert(bounds(-5, 7, 0L) === Some(FileBounds(-5, 7, hasValues = true, rows = 10)))
    assert(bounds(java.sql.Date.valueOf("2000-01-02"), java.time.LocalDate.of(2000, 1, 31), 0L) ===
      Some(FileBounds(10958, 10987, hasValues = true, rows = 10)))
  }

  test("no bounds: all NULL holds no key, otherwise unknown (read); a decimal's are never taken as a key's") {
    assert(bounds(null, null, 10L) === Some(FileBounds.allNull(10)))
    assert(bounds(null, null, 3L).isEmpty)
    assert(bounds(null, null, null).isEmpty)
    assert(bounds(null, null, 10L, records = null).isEmpty)
    assert(bounds(new java.math.BigDecimal("1.5"), new java.math.BigDecimal("2.5"), 0L).isEmpty)
  }
}
