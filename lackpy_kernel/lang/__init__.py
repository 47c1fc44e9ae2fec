"""The lackpy language: grammar, validator, rules and grades. Pure standard library."""

from .grade import Grade, compute_grade
from .grammar import ALLOWED_BUILTINS, ALLOWED_NODES, FORBIDDEN_NAMES, FORBIDDEN_NODES
from .names import free_names
from .rules import max_calls, max_depth, no_loops, no_nested_calls, no_rebinding
from .validator import Issue, Rule, ValidationResult, issue_at, validate

__all__ = [
    "ALLOWED_BUILTINS",
    "ALLOWED_NODES",
    "FORBIDDEN_NAMES",
    "FORBIDDEN_NODES",
    "Grade",
    "Issue",
    "Rule",
    "ValidationResult",
    "compute_grade",
    "free_names",
    "issue_at",
    "max_calls",
    "max_depth",
    "no_loops",
    "no_nested_calls",
    "no_rebinding",
    "validate",
]
