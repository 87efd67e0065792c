"""Data sets: the Clus hierarchical multi-label ARFF loader and its preprocessing.

* :func:`load_hmc_arff` reads one Clus HMC ``.arff``/``.arff.gz`` file;
* :func:`load_hmc` gives the train/test parts of a data set ``<name>.<split>.arff[.gz]``;
* :func:`list_hmc` lists the data sets in a directory;
* :class:`HMCPreprocessor` one-hot encodes nominal attributes, imputes and standardises;
* :func:`load_label_ranking` reads a set of the label ranking benchmark (Cheng et al.);
  :func:`list_label_ranking` lists them;
* :func:`load_partial_label_ranking` reads a set of the partial label ranking benchmark
  (bucket orders: rankings with ties); :func:`list_partial_label_ranking` lists them;
* :func:`make_label_ranking` builds semi-synthetic label-ranking sets from scikit-learn's data;
* :func:`simulate_flows` samples the paper's network-flow problem (Section 6.2);
* :func:`load_data` reads your own data: CSV/TSV with a label column (names or paths),
  MEKA flat multi-label ARFF, svmlight multi-label; :func:`load_hierarchy` a hierarchy file
  (TSV ``parent<TAB>child`` or JSON); see :mod:`ecrm.datasets.formats`;
* :func:`make_hmc` samples a synthetic hierarchical multilabel problem (the demo's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ecrm._lazy import lazy_exports

#: Where each public name is defined. The sub-modules are imported on first use (:pep:`562`):
#: ``ecrm predict`` reads a CSV through :mod:`ecrm.datasets.formats` without loading the ARFF
#: parser, the flow simulator or scikit-learn's data-set loaders (``make_label_ranking``).
_SOURCES: dict[str, str] = {
    **dict.fromkeys(("DATA_HELP", "SPLITS", "ArffError", "list_hmc", "load_hmc",
                     "load_hmc_arff"), "arff"),
    **dict.fromkeys(("FlowModel", "simulate_flows"), "flows"),
    **dict.fromkeys(("DataFileError", "check_finite_features", "load_csv", "load_data",
                     "load_hierarchy", "load_meka_arff", "load_svmlight_multilabel"),
                    "formats"),
    **dict.fromkeys(("LABEL_RANKING_HELP", "list_label_ranking", "load_label_ranking"),
                    "label_ranking"),
    **dict.fromkeys(("PARTIAL_RANKING_HELP", "list_partial_label_ranking",
                     "load_partial_label_ranking"), "partial_ranking"),
    "HMCPreprocessor": "preprocessing",
    **dict.fromkeys(("RANKING_DATASETS", "make_label_ranking"), "ranking"),
    **dict.fromkeys(("make_hmc", "random_tree"), "synthetic"),
}

if TYPE_CHECKING:  # the eager imports, for type checkers and IDEs
    from ecrm.datasets.arff import DATA_HELP, SPLITS, ArffError, list_hmc, load_hmc, load_hmc_arff
    from ecrm.datasets.flows import FlowModel, simulate_flows
    from ecrm.datasets.formats import (
        DataFileError,
        check_finite_features,
        load_csv,
        load_data,
        load_hierarchy,
        load_meka_arff,
        load_svmlight_multilabel,
    )
    from ecrm.datasets.label_ranking import (
        LABEL_RANKING_HELP,
        list_label_ranking,
        load_label_ranking,
    )
    from ecrm.datasets.partial_ranking import (
        PARTIAL_RANKING_HELP,
        list_partial_label_ranking,
        load_partial_label_ranking,
    )
    from ecrm.datasets.preprocessing import HMCPreprocessor
    from ecrm.datasets.ranking import RANKING_DATASETS, make_label_ranking
    from ecrm.datasets.synthetic import make_hmc, random_tree

__all__ = ["ArffError", "DATA_HELP", "DataFileError", "check_finite_features", "FlowModel",
           "HMCPreprocessor", "LABEL_RANKING_HELP", "PARTIAL_RANKING_HELP", "RANKING_DATASETS",
           "SPLITS", "list_hmc", "list_label_ranking", "list_partial_label_ranking", "load_csv",
           "load_data", "load_hierarchy", "load_hmc", "load_hmc_arff", "load_label_ranking",
           "load_meka_arff", "load_partial_label_ranking", "load_svmlight_multilabel", "make_hmc",
           "make_label_ranking", "random_tree", "simulate_flows"]


__getattr__, __dir__ = lazy_exports(__name__, _SOURCES, __all__)
