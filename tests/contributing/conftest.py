"""The example's own tests import its estimator modules, which exist only in a
``pytest --example-methods`` session: collected there, ignored elsewhere."""


def pytest_ignore_collect(collection_path, config):
    if not config.getoption("--example-methods"):
        return True
    return None
