"""Stand-in for the ascend_deepep package (simulated cluster). Not the real library."""

from ascend_deepep.elastic import ElasticBuffer

__all__ = ["ElasticBuffer"]
