"""The semantics table, the sources, the JSON and the errors of test_bulk_filter.py, and the SQL function's tests
of test_bulk_filter_sql.py, run unchanged on a Spark Connect DataFrame: the same checks (rows against plain
Spark's EXISTS formulation, one BulkFilter lowered to value sets or joins, the same typed errors), with `spark`
a Connect client of a local server instead of a classic session. Left out: the explain test of figures after a
run (a Connect server plans each request anew; tests/test_connect.py checks explain on Connect)."""

import pytest

from test_bulk_filter import (  # noqa: F401  (pytest collects the imported tests and fixtures here)
    cars, files,
    test_include_is_exists, test_exclude_is_not_exists_and_keeps_null_keys, test_nulls_among_values_match_nothing,
    test_and_or_nested, test_duplicate_rows_kept_exactly, test_empty_value_set, test_values_cast_to_column_type,
    test_uncastable_value_is_an_error_naming_the_file, test_every_source_kind, test_json_round_trip,
    test_errors_at_apply_name_what_is_wrong, test_builder_checks_its_arguments,
    test_paths_with_spaces_and_many_files_on_one_column, test_thousand_leaf_tree_matches_an_independent_evaluation,
)
from test_bulk_filter_sql import (  # noqa: F401
    test_leaves_and_nested_trees_as_tree_apply, test_table_sources_and_a_query_as_input,
    test_the_dataframe_api_reaches_it_through_spark_sql, test_errors_name_the_argument_or_the_json_path,
)

import spark_sieve as sieve


@pytest.fixture(scope="module")
def spark(connect):
    """Every imported test's `spark` is the Connect client (and so are its `cars` and `files`)."""
    return connect


def test_the_imported_tests_run_on_connect(spark, cars):
    assert sieve._connect.is_connect(spark) and sieve._connect.is_connect_dataframe(cars)
