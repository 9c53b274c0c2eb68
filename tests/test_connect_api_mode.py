"""Spark 4's ``spark.api.mode=connect``: a builder with a master and that setting gets a Spark Connect session
on a local server that PySpark starts with the builder's settings. spark_sieve.configure's jar, extension and
relation plugin reach that server as they do from ``.remote("local")``: test_connect.py's tests (bulk filters,
explain, status, the SQL function, typed errors, a dynamic filter) run unchanged on it."""

import pytest

from spark_line import LINE
from test_bulk_filter import cars, files  # noqa: F401  (with `spark` below: the cars table and value files)
from test_connect import (  # noqa: F401  (pytest collects the imported tests here)
    test_a_dynamic_filter_fires_in_a_connect_query, test_bulk_filters_on_a_connect_dataframe,
    test_errors_are_typed_on_connect, test_explain_and_status_without_py4j, test_sql_function_from_connect,
)

pytestmark = pytest.mark.skipif(LINE < (4, 0), reason="Spark 3.5 has no spark.api.mode (arrived in 4.0)")


@pytest.fixture(scope="module")
def connect(api_mode_connect):
    """Every imported test's Connect session is the api-mode one."""
    return api_mode_connect


@pytest.fixture(scope="module")
def spark(connect):
    return connect
