package sieve.scan

import java.lang.ref.WeakReference

import org.apache.hadoop.fs.FileStatus
import org.apache.parquet.hadoop.ParquetInputFormat

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.execution.{ColumnarToRowExec, FileSourceScanExec, FilterExec, InputAdapter, ProjectExec,
  SparkPlan}
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, PartitioningAwareFileIndex}
import org.apache.spark.sql.execution.datasources.parquet.{ParquetFileFormat, ParquetUtils}
import org.apache.spark.sql.connector.read.{InputPartition, SupportsReportPartitioning}
import org.apache.spark.sql.connector.read.partitioning.KeyGroupedPartitioning
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.internal.SQLConf

import sieve.formats.{DeltaFileBounds, FileBounds, IcebergTasks, TableFormats}
import sieve.plan.PlanMemo
import sieve.config.SieveConf
import sieve.keyset.{EmptyKeySet, KeyRanges, KeySet}

/**
 * A key set pushed, at run time once it is known, into the file scan that produces its (single, plain
 * column) key, so the reader skips what cannot match: the IN-set (small ones) and up to `maxRanges`
 * key ranges. A Parquet scan whose footers are read ([[KeyPrunedFileIndex]]) drops the files no key
 * can be in before its tasks are planned, and gets the ranges only when they skip row groups inside
 * the files it keeps: a pushed filter that skips nothing still costs the reader its statistics,
 * dictionary and page-index checks (measured: ~0.2 s per filter on a 150 MB TPC-DS scan).
 */
object KeyScanPushdown {
  final case class Limits(inSize: Long, maxRanges: Int, maxFooterFiles: Long)

  object Limits {
    /** The session's scan-pushdown settings (spark.sieve.dynamicFilter.pushdown*, maxFooterFiles), which
     * every key pushed into a scan follows. */
    def from(conf: SQLConf): Limits = Limits(SieveConf.DYNAMIC_FILTER_PUSHDOWN_IN_SIZE.get(conf),
      SieveConf.DYNAMIC_FILTER_PUSHDOWN_RANGES.get(conf).min(Int.MaxValue.toLong).toInt,
      SieveConf.DYNAMIC_FILTER_MAX_FOOTER_FILES.get(conf))
  }

  /** What was pushed: the predicates added to the scan's data filters, and the footer counts. */
  final case class Pushed(predicates: Seq[Expression], pruning: Option[KeyPrunedFileIndex.Counts])

  /** `plan` with `keys` pushed into the scan below it that produces `key` (or `plan` unchanged);
   * `publish` receives the footer counts as they are read. */
  def apply(plan: SparkPlan, key: Attribute, keys: KeySet, limits: Limits, conf: SQLConf,
      publish: KeyPrunedFileIndex.Counts => Unit): (SparkPlan, Pushed) =
    scanBelow(plan, key).map { scan =>
      val column = scan.output.find(_.exprId == key.exprId).get
      if (isDelta(scan)) tablePruning(plan, scan, column, keys, limits, conf, publish)
      else filePruning(plan, scan, column, keys, limits, conf, publish)
    }.orElse(batchScanBelow(plan, key).flatMap(taskPruning(plan, _, key, keys, limits, conf, publish)))
      .getOrElse((plan, Pushed(Nil, None)))

  /** `plan` with the input partitions of `scan`, a data source V2 scan, that hold no key left out before any
   * starts: an Iceberg table's tasks whose files' bounds hold none ([[IcebergTasks]]), or else those the source's
   * own runtime filtering drops ([[SourceRuntimeFiltering]]); the counts name why none is left out where the
   * column's binding in the source is not proven. None when it has runtime filters of its own (DPP's, which plan
   * its partitions again) or its partitions are grouped by key (a storage-partitioned join's). */
  private def taskPruning(plan: SparkPlan, scan: BatchScanExec, key: Attribute, keys: KeySet, limits: Limits,
      conf: SQLConf, publish: KeyPrunedFileIndex.Counts => Unit): Option[(SparkPlan, Pushed)] =
    if (scan.runtimeFilters.exists(_ != DynamicPruningExpression(Literal.TrueLiteral)) || keyGrouped(scan)) None
    else {
      val column = scan.output.find(_.exprId == key.exprId).get
      val counts = new KeyPrunedFileIndex.Counts(publish)
      val pruned = icebergTasks(scan, column, keys, limits, counts).orElse {
        SourceRuntimeFiltering.filter(scan.scan, scan.inputPartitions, column.name, column.dataType, keys,
          limits.inSize, conf.resolver).map(_.map { filtered =>
          counts.runtimeFilteredPartitions = filtered.before
          counts.partitionsSkipped = filtered.before - filtered.partitions.size
          filtered.partitions
        })
      }
      pruned.map { outcome =>
        outcome.left.foreach(counts.pruningDeclined = _)
        counts.report()
        val pushed = Pushed(Nil, Some(counts))
        outcome match {
          case scala.util.Right(partitions) if counts.filesSkipped > 0 || counts.partitionsSkipped > 0 =>
            (plan.transformUp {
              case s: BatchScanExec if s eq scan =>
                SharedScanMetrics(s, s.copy(scan = new PrunedV2Scan(s.scan, partitions, s.supportsColumnar)))
            }, pushed)
          case _ => (plan, pushed)
        }
      }
    }

  /** The input partitions of `scan`, an Iceberg table's, less the tasks whose files' bounds hold no key (Left: why
   * none is left out); None for a scan of another source or a key without bounds. */
  private def icebergTasks(scan: BatchScanExec, column: Attribute, keys: KeySet, limits: Limits,
      counts: KeyPrunedFileIndex.Counts): Option[Either[String, Seq[InputPartition]]] =
    // (IcebergTasks is loaded only for an Iceberg scan: its class needs Iceberg's on the classpath)
    if (!TableFormats.isIceberg(scan.scan) || !KeyPrunedFileIndex.supports(column.dataType)) None
    else keys.ranges(math.max(limits.maxRanges, FileBounds.Ranges)).map { ranges =>
      val start = System.nanoTime()
      val outcome = IcebergTasks.prune(scan.scan, scan.inputPartitions, column.name, ranges)
      counts.timeNs += System.nanoTime() - start
      outcome.map { pruned =>
        counts.statsSource = "Iceberg's manifests"
        counts.tableStatsFiles = pruned.filesBefore
        counts.filesSkipped = pruned.filesBefore - pruned.filesAfter
        pruned.partitions
      }
    }

  /** `plan` with `keys` pushed into `scan`: the files whose footers hold no key left out of its listing, the
   * ranges (or the IN-set) pushed to its reader where they skip row groups. */
  private def filePruning(plan: SparkPlan, scan: FileSourceScanExec, column: Attribute, keys: KeySet,
      limits: Limits, conf: SQLConf, publish: KeyPrunedFileIndex.Counts => Unit): (SparkPlan, Pushed) = {
    val ranges = keys.ranges(limits.maxRanges)
    val footers = ranges.flatMap(footerPruning(scan, column, _, limits.maxFooterFiles, conf, publish))
    val predicates = (keys, footers) match {
      case (EmptyKeySet, _) => Seq(Literal(false))
      case (_, Some((_, Some(skipsInsideFiles), _))) =>
        // Spark pushes an IN of more than a few values to Parquet as its min/max: the ranges say more
        if (skipsInsideFiles || SieveConf.placeEveryFilter(conf)) ranges.map(_.predicate(column)).toSeq else Nil
      case (k, Some((_, None, _))) =>
        // a footer without the key's statistics: the keys' one range only, a min/max check per row group;
        // an IN-list or many ranges cost every file's reader its dictionary and page-index checks (TPC-DS
        // q7, store_sales partitioned by date, 366 files read: 3.29 s vs 2.71 s, vanilla 2.58)
        k.ranges(1).map(_.predicate(column)).toSeq
      case (k, None) => k.inLiterals(column.dataType, limits.inSize).map(vs => Seq(In(column, vs))).getOrElse(Nil) ++
        ranges.map(_.predicate(column)).toSeq
    }
    val pushed = Pushed(predicates, footers.map(_._3))
    if (predicates.isEmpty && footers.forall(_._1 eq scan.relation)) (plan, pushed)
    else (plan.transformUp {
      case s: FileSourceScanExec if s eq scan => SharedScanMetrics(scan, scan.copy(
        relation = withoutDictionaryFilter(footers.map(_._1).getOrElse(scan.relation), predicates),
        dataFilters = scan.dataFilters ++ predicates))
    }, pushed)
  }

  /** `relation`, whose Parquet readers skip no row group by its dictionaries when `predicates` hold key ranges:
   * Parquet tests each leaf of their OR against every value of each row group's dictionary, which on a key
   * column dictionary-encoded in part costs more than its rows' read (TPC-H q18, 32 ranges of the order keys:
   * orders' and lineitem's scans 5-7x slower a row with it); the row groups' statistics skip what the ranges
   * rule out. */
  private def withoutDictionaryFilter(relation: HadoopFsRelation, predicates: Seq[Expression]): HadoopFsRelation =
    if (!predicates.exists(_.exists(_.isInstanceOf[Or]))) relation
    else relation.copy(options = relation.options + (ParquetInputFormat.DICTIONARY_FILTERING_ENABLED -> "false"))(
      relation.sparkSession)

  /** `plan` with `keys` pushed into the data filters of `scan`, a Delta table's, as key ranges: its listing drops
   * the files whose bounds in the log hold no key ([[TableStatsFileIndex]]), before any is opened, and the reader
   * the row groups; nothing where the bounds put a key in every file or the scan is too small to pay for them. */
  private def tablePruning(plan: SparkPlan, scan: FileSourceScanExec, column: Attribute, keys: KeySet,
      limits: Limits, conf: SQLConf, publish: KeyPrunedFileIndex.Counts => Unit): (SparkPlan, Pushed) = {
    // a few key ranges, no IN-list: Delta tests each pushed predicate against the log's min / max per file (and
    // whether the file has them) in one generated filter over its log, which Java caps at 64 KB a method (see
    // TableStatsFileIndex), and each key range narrower than the files' holds as much as an IN-list of its keys
    def predicates(n: Int): Seq[Expression] = keys match {
      case EmptyKeySet => Seq(Literal(false))
      case k => k.ranges(n).map(_.predicate(column)).toSeq
    }
    val pushed = predicates(math.min(limits.maxRanges, TableStatsFileIndex.MaxRanges))
    if (pushed.isEmpty) return (plan, Pushed(Nil, None))
    val counts = new KeyPrunedFileIndex.Counts(publish)
    val bounds = deltaBounds(scan, column, conf) match {
      case scala.util.Left(why) if keys != EmptyKeySet =>
        counts.pruningDeclined = why
        counts.report()
        return (plan, Pushed(Nil, Some(counts)))
      case other => other.toOption
    }
    // (the file bounds are those of an integral or date column: another's keep every file)
    val ranges = Some(keys).filter(_ => KeyPrunedFileIndex.supports(column.dataType)).flatMap(_.ranges(FileBounds.Ranges))
      .getOrElse(KeyRanges(Array((Long.MinValue, Long.MaxValue))))
    val group = TableStatsFileIndex.Group(column.name, ranges, pushed, n => predicates(math.min(limits.maxRanges, n)),
      counts)
    // the log's bounds of every file of the snapshot hold a key: nothing to skip, no key range pushed into the
    // reader either (its checks would cost each file their time: TPC-DS q7 at sf1)
    bounds.flatten match {
      case Some(byPath) if byPath.nonEmpty && byPath.values.forall(_.mayHold(ranges)) && !SieveConf.placeEveryFilter(conf) =>
        counts.pruningDeclined = s"the Delta log's statistics put a key in each of the ${byPath.size} files they bound"
        counts.report()
        return (plan, Pushed(Nil, Some(counts)))
      case _ =>
    }
    val relation = scan.relation
    val index = relation.location match {
      case other: TableStatsFileIndex => other.and(group) // a filter pushed already: listed together
      case table => new TableStatsFileIndex(table, Seq(group), "the Delta log")
    }
    (plan.transformUp {
      case s: FileSourceScanExec if s eq scan => SharedScanMetrics(scan, scan.copy(
        relation = withoutDictionaryFilter(relation.copy(location = index)(relation.sparkSession), pushed),
        dataFilters = scan.dataFilters ++ pushed))
    }, Pushed(pushed, Some(counts)))
  }

  /** The Delta log's bounds of `column` for each file of the snapshot `scan` reads (None: they cannot be read,
   * and the log is listed for the keys instead); Left, why none are read: the scan reads less than the job that
   * reads them costs (once per table version), weighed as the wait for keys is (TPC-DS q1 at sf1: store_returns'
   * 3.4 MB in 2 files, none skipped; a listing of the log for the keys took ~0.3 s of a 0.9 s query). */
  private def deltaBounds(scan: FileSourceScanExec, column: Attribute, conf: SQLConf)
      : Either[String, Option[Map[String, FileBounds]]] = {
    val reads = PrunedScanBytes.readShare(scan, PrunedScanBytes.relationBytes(scan.relation))
    val jobBytes = BigDecimal(SieveConf.DYNAMIC_FILTER_STAGE_START_BYTES.get(conf)) *
      SieveConf.DYNAMIC_FILTER_WAIT_WEIGHT.get(conf)
    if (BigDecimal(reads) < jobBytes && !SieveConf.placeEveryFilter(conf)) scala.util.Left(s"the scan reads $reads bytes, less than reading the Delta log's file " +
      s"statistics (a Spark job) costs (stageStartBytes x waitWeight, $jobBytes)")
    else if (!KeyPrunedFileIndex.supports(column.dataType)) scala.util.Right(None)
    else {
      val table = scan.relation.location match {
        case derived: TableStatsFileIndex => derived.delegate
        case table => table
      }
      scala.util.Right(DeltaFileBounds.of(table, Seq(column.name), conf.resolver).toOption.map(_(column.name)))
    }
  }

  /** Whether `scan` reads a Delta table: its file index Delta's, or one a filter pushed into it derived. */
  private def isDelta(scan: FileSourceScanExec): Boolean = scan.relation.location match {
    case _: TableStatsFileIndex => true
    case index => TableFormats.isDelta(index)
  }

  private def keyGrouped(scan: BatchScanExec): Boolean = scan.scan match {
    case s: SupportsReportPartitioning => s.outputPartitioning.isInstanceOf[KeyGroupedPartitioning]
    case _ => false
  }

  /** The file scan producing `key` at the end of a chain of operators that only pass rows on. The chain
   * is copied when the scan gets the pushed filter, so it holds nothing whose state the generated code
   * of this stage already refers to (another filter's set, a join's hash relation). */
  def scanBelow(plan: SparkPlan, key: Attribute): Option[FileSourceScanExec] =
    scanBelow(plan).filter(_.output.exists(_.exprId == key.exprId))

  /** The file scan at the end of such a chain. */
  def scanBelow(plan: SparkPlan): Option[FileSourceScanExec] = leafBelow(plan).collect { case s: FileSourceScanExec => s }

  /** The data source V2 scan producing `key` at the end of such a chain. */
  private def batchScanBelow(plan: SparkPlan, key: Attribute): Option[BatchScanExec] =
    leafBelow(plan).collect { case s: BatchScanExec if s.output.exists(_.exprId == key.exprId) => s }

  private def leafBelow(plan: SparkPlan): Option[SparkPlan] = plan match {
    case _: ProjectExec | _: FilterExec | _: ColumnarToRowExec | _: InputAdapter => leafBelow(plan.children.head)
    case leaf if leaf.children.isEmpty => Some(leaf)
    case _ => None
  }

  /** For a plain Parquet scan of an integral or date data column: the relation listing only the files
   * whose footers allow a key, whether the footers show row groups to skip inside those files (None
   * when they cannot tell), and the counts. A scan of more than `maxFiles` files keeps its relation and
   * reads a sample of footers for the second answer: a filter pushed into the reader of each of a
   * partitioned fact's files, which skips nothing there, costs every reader its dictionary and page-index
   * checks (TPC-DS q26 at sf10, catalog_sales partitioned by date into 1,835 files, three dimensions'
   * keys spread over every row group: 0.85x vanilla with one range each pushed). */
  private def footerPruning(scan: FileSourceScanExec, column: Attribute, ranges: KeyRanges, maxFiles: Long,
      conf: SQLConf, publish: KeyPrunedFileIndex.Counts => Unit)
      : Option[(HadoopFsRelation, Option[Boolean], KeyPrunedFileIndex.Counts)] = {
    if (!footersUsable(scan, column, maxFiles, conf)) return None
    val relation = scan.relation
    val counts = new KeyPrunedFileIndex.Counts(publish)
    val files = listed(scan)
    val sample = KeyPrunedFileIndex.footerSample(files, maxFiles)
    // with every footer read, the files no key can be in are not listed: row groups skipped beside others only
    val pruned = sample.size == files.size
    val skips = KeyPrunedFileIndex.skipsInside(sample, column.name, conf.caseSensitiveAnalysis, hadoopConf(scan),
      ranges, filesPruned = pruned, counts)
    if (pruned) {
      val index = new KeyPrunedFileIndex(relation.location, column.name, conf.caseSensitiveAnalysis, ranges,
        maxFiles, hadoopConf(scan), counts)
      Some((relation.copy(location = index)(relation.sparkSession), skips, counts))
    } else {
      counts.footersNotRead = files.size
      counts.footersSampled = sample.size
      counts.report()
      Some((relation, skips, counts))
    }
  }

  /** The files the scan may read: its listing under its static partition filters (a superset). */
  private def listed(scan: FileSourceScanExec): Seq[FileStatus] = listedOf(scan)

  // (checking a cached listing is still current sums its files' sizes: once per scan while the planner runs)
  private val listedOf = new PlanMemo.Memo[FileSourceScanExec, Seq[FileStatus]](listedNow)

  private def listedNow(scan: FileSourceScanExec): Seq[FileStatus] = {
    val index = scan.relation.location
    val filters = PrunedScanBytes.staticFilters(scan)
    val key = (System.identityHashCode(index), filters.map(_.canonicalized))
    val size = PrunedScanBytes.indexBytes(index)
    Option(listings.get(key)).collect { case (ref, sized, files) if (ref.get eq index) && sized == size => files }
      .getOrElse {
        val files = index.listFiles(filters, Nil).flatMap(_.files.map(_.fileStatus)).toIndexedSeq
        listings.put(key, (new WeakReference(index), size, files))
        files
      }
  }

  // the planner asks for a scan's listing again and again (each join, each walk, each AQE re-plan): ~3 ms
  // each for TPC-DS store_sales' 1,823 partitions, ~30 ms of every plan of q68. Kept per file index (the
  // instance) and static filters while the index's size stays the same (a refreshed index lists again).
  private type Listing = (WeakReference[FileIndex], Long, Seq[FileStatus])
  private val listings = java.util.Collections.synchronizedMap(
    new java.util.LinkedHashMap[(Int, Seq[Expression]), Listing](16, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[(Int, Seq[Expression]), Listing]): Boolean = size() > 64
    })

  /** The key column's row-group statistics over every file the scan below `plan` may read (its footers,
   * read once: the footer pruning that follows reuses them) — over more than `maxFiles` files, a sample's
   * ([[KeyPrunedFileIndex.footerSample]]) — or None when the footers do not give them. */
  def rowGroups(plan: SparkPlan, key: Attribute, maxFiles: Long, conf: SQLConf): Option[Seq[KeyPrunedFileIndex.RowGroup]] =
    scanBelow(plan, key).filter(isDelta) match {
      case Some(scan) => deltaRowGroups(scan, scan.output.find(_.exprId == key.exprId).get, conf)
      case None => rowGroupsByFile(plan, key, maxFiles, conf).map(_.values.flatten.toSeq)
    }

  /** A Delta scan's files as row groups, one a file, from its log's bounds and record counts (of every file of
   * the snapshot: [[scanRows]] counts them whole), where the log gives them for every file. */
  private def deltaRowGroups(scan: FileSourceScanExec, column: Attribute, conf: SQLConf)
      : Option[Seq[KeyPrunedFileIndex.RowGroup]] =
    deltaBounds(scan, column, conf).toOption.flatten.filter(b => b.nonEmpty && b.values.forall(_.rows >= 0))
      .map(_.values.map(b => KeyPrunedFileIndex.RowGroup(b.lower, b.upper, b.hasValues, b.rows)).toSeq)

  /** [[rowGroups]] of each file, by its path (each file's in its footer's order). */
  def rowGroupsByFile(plan: SparkPlan, key: Attribute, maxFiles: Long, conf: SQLConf)
      : Option[Map[String, Array[KeyPrunedFileIndex.RowGroup]]] =
    scanBelow(plan, key).flatMap { scan =>
      val column = scan.output.find(_.exprId == key.exprId).get
      if (!footersUsable(scan, column, maxFiles, conf)) None
      else {
        val files = KeyPrunedFileIndex.footerSample(listed(scan), maxFiles)
        if (files.isEmpty) None
        else {
          val stats = KeyPrunedFileIndex.readAll(files, column.name, conf.caseSensitiveAnalysis, hadoopConf(scan))
          if (stats.size < files.size) None else Some(stats)
        }
      }
    }

  /** The rows of the scan below `plan`, from `groups` ([[rowGroups]] of one of its columns: of a sample when
   * the listing is longer than `maxFiles`) scaled by the listing's bytes over those of the files read. */
  def scanRows(plan: SparkPlan, groups: Seq[KeyPrunedFileIndex.RowGroup], maxFiles: Long): Option[Long] =
    scanBelow(plan).map { scan =>
      // (a Delta scan's groups are every file of its snapshot: [[deltaRowGroups]])
      if (isDelta(scan)) return Some(groups.map(_.rows).sum)
      val files = listed(scan)
      val read = KeyPrunedFileIndex.footerSample(files, maxFiles).map(_.getLen).sum
      val rows = groups.map(_.rows).sum
      if (read <= 0) rows else (BigDecimal(rows) * files.map(_.getLen).sum / read).toLong
    }

  /** Whether the key column's values are spread over every row group of the scan below `plan`: each of a
   * sample of its row groups ([[plannedRowGroups]]) spans at least half of the range of values they hold
   * together. No key ranges pushed into such a scan skip a row group unless every key lies at one end of
   * that range. Not a column of one value (keys without it rule out every row group). False when the
   * footers do not say. */
  def keysSpreadOverRowGroups(plan: SparkPlan, key: Attribute, maxFiles: Long, conf: SQLConf): Boolean =
    plannedRowGroups(plan, key, math.min(maxFiles, KeyPrunedFileIndex.SampleFiles.toLong), conf).exists { groups =>
      val held = groups.filter(_.hasValues)
      held.nonEmpty && {
        val whole = held.map(_.max).max.toDouble - held.map(_.min).min + 1
        whole > 1 && held.forall(g => (g.max.toDouble - g.min + 1) >= whole / 2)
      }
    }

  /** The row groups of the scan below `plan` in all, by the footers of the first of its columns they give
   * statistics of (an integral or date one: [[plannedRowGroups]], every footer read: at most `maxFiles` files);
   * None when none does. */
  def plannedRowGroupCount(plan: SparkPlan, maxFiles: Long, conf: SQLConf): Option[Int] =
    scanBelow(plan).flatMap(_.output.iterator.map(c => plannedRowGroups(plan, c, maxFiles, conf, whole = true))
      .collectFirst { case Some(groups) => groups.size })

  /** [[rowGroups]] for the planner, which asks before anything runs: only for a scan whose files are listed
   * in memory already (a catalog table's partitions: listing them again each time a plan is made costs
   * more than the answer saves) and, with `whole`, only when every footer is read (no sample). */
  def plannedRowGroups(plan: SparkPlan, key: Attribute, maxFiles: Long, conf: SQLConf,
      whole: Boolean = false): Option[Seq[KeyPrunedFileIndex.RowGroup]] =
    plannedRowGroupsByFile(plan, key, maxFiles, conf, whole).map(_.values.flatten.toSeq)

  /** [[plannedRowGroups]] of each file, by its path. */
  def plannedRowGroupsByFile(plan: SparkPlan, key: Attribute, maxFiles: Long, conf: SQLConf,
      whole: Boolean = false): Option[Map[String, Array[KeyPrunedFileIndex.RowGroup]]] =
    scanBelow(plan, key).filter(s => s.relation.location.isInstanceOf[PartitioningAwareFileIndex] &&
      (!whole || listed(s).size <= maxFiles)).flatMap(_ => rowGroupsByFile(plan, key, maxFiles, conf))

  /** A plain Parquet scan of an integral or date data column whose footers name it as the reader finds it (by
   * name): not a Delta table's, whose files may name its columns otherwise (column mapping: an older column may
   * hold the name there), nor a column the reader finds by its field id (`spark.sql.parquet.fieldId.read.enabled`,
   * which Delta's session turns on, and an id in the column's metadata; a column without one is read by name). */
  private def footersUsable(scan: FileSourceScanExec, column: Attribute, maxFiles: Long, conf: SQLConf): Boolean = {
    val relation = scan.relation
    val resolver = conf.resolver
    val byFieldId = conf.getConfString("spark.sql.parquet.fieldId.read.enabled", "false").toBoolean
    relation.fileFormat.isInstanceOf[ParquetFileFormat] && maxFiles > 0 && !isDelta(scan) &&
      KeyPrunedFileIndex.supports(column.dataType) &&
      relation.dataSchema.find(f => resolver(f.name, column.name))
        .exists(f => !(byFieldId && ParquetUtils.hasFieldId(f))) &&
      !relation.partitionSchema.exists(f => resolver(f.name, column.name))
  }

  private def hadoopConf(scan: FileSourceScanExec) =
    scan.relation.sparkSession.sessionState.newHadoopConfWithOptions(scan.relation.options)
}
