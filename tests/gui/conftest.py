"""The console's tests share the qasync loop fixtures (`aloop`, `drive`) of tests/conftest.py,
which the journeys (tests/journeys) use too."""
