import pytest

from tests.topiclog.harness import BACKENDS, HAVE_MMAP, LogStack


def _backend_param(name):
    marks = (
        [pytest.mark.skip(reason="hedwig.ledger.mmap_store is not in the tree")]
        if name == "mmap" and not HAVE_MMAP
        else []
    )
    return pytest.param(name, marks=marks)


@pytest.fixture(params=[_backend_param(name) for name in BACKENDS])
def backend(request):
    return request.param


@pytest.fixture
def make_stack(backend, tmp_path):
    """make_stack(settings=None, **ledger_options) -> LogStack, closed after the test."""
    stacks = []

    def make(settings=None, **ledger_options):
        directory = tmp_path / f"stack{len(stacks)}"
        directory.mkdir()
        stack = LogStack(backend, directory, settings, **ledger_options)
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()
