"""Fixtures of the weight families' tests."""

import pytest


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of two single-thread workers in this process (no process start-up); the
    Client is the default scheduler of every compute while it is open."""
    distributed = pytest.importorskip("distributed", reason="the Dask tests need distributed "
                                      "(pip install 'ecrm[dask]')")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c
