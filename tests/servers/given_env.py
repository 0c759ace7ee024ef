"""The environment a test server was given, without what the test run's fork server adds to every process
(``tests/forkserver.py``): what a server started by a user would see."""

import os


def given_environment() -> dict[str, str]:
    env = dict(os.environ)
    if env.pop("LAZYMCP_TEST_FORKSERVER", None) is not None:
        path = [entry for entry in env.pop("PYTHONPATH", "").split(os.pathsep) if entry and not entry.endswith("fork")]
        if path:
            env["PYTHONPATH"] = os.pathsep.join(path)
    return env
