package sieve.formats

import org.apache.iceberg.Schema
import org.apache.iceberg.types.Types.{IntegerType, LongType, NestedField}
import org.scalatest.funsuite.AnyFunSuite

/** The name a key column of an Iceberg scan is bound by in Iceberg's planning: the current schema's name of the
 * field id the scan reads, only where that name binds back to the same field. */
class IcebergBindingSuite extends AnyFunSuite {
  private def schema(fields: (Int, String)*): Schema =
    new Schema(fields.map { case (id, name) => NestedField.optional(id, name, IntegerType.get()) }: _*)

  // k (1) and j (2) before; k renamed to k_old and j to k after
  private val before = schema(1 -> "k", 2 -> "j", 3 -> "v")
  private val swapped = schema(1 -> "k_old", 2 -> "k", 3 -> "v")

  test("a column is bound by its field id's name today, not by its own name") {
    assert(IcebergBinding.bound(before, Seq(swapped), "k", caseSensitive = true) === Right("k_old"))
    assert(IcebergBinding.bound(before, Seq(swapped), "j", caseSensitive = true) === Right("k"))
    assert(IcebergBinding.bound(swapped, Seq(swapped), "k", caseSensitive = true) === Right("k"))
  }

  test("a field dropped since (k added again is another field) declines, naming the field id") {
    val readded = schema(2 -> "j", 3 -> "v", 4 -> "k")
    assert(IcebergBinding.bound(before, Seq(readded), "k", caseSensitive = true) ===
      Left("k (field id 1) has no name binding it in the schemas Iceberg plans the scan with"))
    assert(IcebergBinding.bound(readded, Seq(readded), "k", caseSensitive = true) === Right("k"))
  }

  test("every spec's schema must give the same name; an unknown column declines") {
    val other = schema(1 -> "key", 2 -> "j", 3 -> "v")
    assert(IcebergBinding.bound(before, Seq(swapped, other), "k", caseSensitive = true).isLeft)
    assert(IcebergBinding.bound(before, Seq(before), "missing", caseSensitive = true) ===
      Left("missing is no field of the schema the scan reads"))
  }

  test("without case sensitivity a name is found in any case, and a promoted type keeps its field") {
    assert(IcebergBinding.bound(before, Seq(swapped), "K", caseSensitive = false) === Right("k_old"))
    assert(IcebergBinding.bound(before, Seq(swapped), "K", caseSensitive = true).isLeft)
    val promoted =
      new Schema(NestedField.optional(1, "k", LongType.get()), NestedField.optional(2, "j", IntegerType.get()))
    assert(IcebergBinding.bound(before, Seq(promoted), "k", caseSensitive = true) === Right("k"))
  }
}
