package sieve.formats

import sieve.keyset.KeyRanges

/** A data file's bounds on one column as its table format's metadata keeps them: its lowest and highest value (as
 * longs: days for a date), or, with `hasValues` false, none but NULL; its rows where known (else -1). A file without
 * them in the metadata is read. */
final case class FileBounds(lower: Long, upper: Long, hasValues: Boolean, rows: Long = -1) {
  def mayHold(ranges: KeyRanges): Boolean = hasValues && ranges.overlaps(lower, upper)
}

object FileBounds {
  /** The key ranges each file's bounds are tested against (a binary search a file, on the driver): at most this
   * many, the keys themselves where they are fewer. */
  val Ranges = 4096

  /** A file all of whose values of the column are NULL: it holds no key. */
  def allNull(rows: Long = -1): FileBounds = FileBounds(0, 0, hasValues = false, rows)
}
