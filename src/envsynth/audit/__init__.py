"""The OOD audit: how close a corpus's apps are to evaluation benchmarks' domains (``envsynth audit``).

The reference lists (domain and tool names of tau2-bench, AppWorld and BFCL, written from
their public documentation) ship in ``references/``; the similarity is lexical (TF-IDF
cosine), so the audit runs offline. See docs/report.md, "OOD audit".
"""

from envsynth.audit.audit import BENCHMARKS, OVERLAP, AuditError, audit, audit_apps, corpus_apps, load_references, read_apps

__all__ = ["BENCHMARKS", "OVERLAP", "AuditError", "audit", "audit_apps", "corpus_apps", "load_references", "read_apps"]
