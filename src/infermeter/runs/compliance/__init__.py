"""MLPerf audit (compliance) tests TEST01, TEST04 and TEST06: configs, runs, verification."""

from infermeter.runs.compliance.audit import AuditReport, run_audit
from infermeter.runs.compliance.configs import TESTS, audit_config_text, parse_test
from infermeter.runs.compliance.layout import ComplianceResult, verify

__all__ = [
    "TESTS",
    "AuditReport",
    "ComplianceResult",
    "audit_config_text",
    "parse_test",
    "run_audit",
    "verify",
]
