"""The plug-in's registration: a FamilySpec naming the module that holds the family. Importing
this must stay cheap and torch-free."""
from rla_engine.tasks import FamilySpec

SPEC = FamilySpec(
    name="parity",
    summary="Say whether a number is even or odd (a worked example of a plug-in text family).",
    module="rla_family_example.family",
    kind="text",
)
