"""Data source options: defaults, every position form, and a clear error for bad input."""

import pytest

from hedwig.spark.options import EARLIEST, LATEST, OptionError, parse_options


def parse(streaming=False, **options):
    return parse_options({"hub": "127.0.0.1:4080", "topics": "a,b", **options}, streaming)


def test_batch_defaults_read_everything_held():
    opts = parse()
    assert opts.hubs == ("127.0.0.1:4080",)
    assert opts.topics == ("a", "b")
    assert opts.starting == {"a": EARLIEST, "b": EARLIEST}
    assert opts.ending == {"a": LATEST, "b": LATEST}
    assert opts.fail_on_data_loss is True
    assert opts.max_messages_per_trigger is None


def test_streams_start_at_latest_by_default():
    assert parse(streaming=True).starting == {"a": LATEST, "b": LATEST}


def test_option_names_are_case_insensitive_and_values_parsed():
    opts = parse_options(
        {
            "HUB": "h1:1, h2:2, h3, [::1]:7, h1:1",
            "Topics": "x, y, x",
            "STARTINGSEQ": '{"x": 5, "y": "Earliest"}',
            "maxmessagespertrigger": "1_000",
            "FailOnDataLoss": "False",
            "maxMessagesPerPartition": "10",
            "timeout": "2.5",
        },
        streaming=True,
    )
    assert opts.hubs == ("h1:1", "h2:2", "h3:4080", "[::1]:7")
    assert opts.topics == ("x", "y")
    assert opts.starting == {"x": 5, "y": EARLIEST}
    assert opts.max_messages_per_trigger == 1000
    assert opts.fail_on_data_loss is False
    assert opts.max_messages_per_partition == 10
    assert opts.timeout_s == 2.5


@pytest.mark.parametrize(
    "options, message",
    [
        ({"topics": "a"}, "option 'hub' is required"),
        ({"hub": "h:1"}, "option 'topics' is required"),
        ({"hub": "h:1", "topics": "a", "subscribe": "a"}, "unknown option 'subscribe'"),
        ({"hub": ":80", "topics": "a"}, "has no host"),
        ({"hub": "h:http", "topics": "a"}, "port 'http' is not a number"),
        ({"hub": "h:70000", "topics": "a"}, "outside 1-65535"),
        ({"hub": " , ", "topics": "a"}, "names no address"),
        ({"hub": "h:1", "topics": "a,b/c"}, "characters outside"),
        ({"hub": "h:1", "topics": ","}, "names no topic"),
        ({"hub": "h:1", "topics": "a", "startingSeq": "first"}, "expected earliest or latest, or a JSON"),
        ({"hub": "h:1", "topics": "a", "startingSeq": '{"a": 0}'}, "expected a seq-id"),
        ({"hub": "h:1", "topics": "a", "startingSeq": '{"a": true}'}, "expected a seq-id"),
        ({"hub": "h:1", "topics": "a,b", "startingSeq": '{"a": 1}'}, "no position for topics b"),
        ({"hub": "h:1", "topics": "a", "startingSeq": '{"a": 1, "z": 1}'}, "not in 'topics': z"),
        ({"hub": "h:1", "topics": "a", "endingSeq": "earliest"}, "expected latest, or a JSON"),
        (
            {"hub": "h:1", "topics": "a", "startingSeq": '{"a": 9}', "endingSeq": '{"a": 3}'},
            "endingSeq 3 is before startingSeq 9",
        ),
        ({"hub": "h:1", "topics": "a", "maxMessagesPerPartition": "0"}, "positive whole number"),
        ({"hub": "h:1", "topics": "a", "maxMessagesPerPartition": "lots"}, "positive whole number"),
        ({"hub": "h:1", "topics": "a", "failOnDataLoss": "maybe"}, "expected true or false"),
        ({"hub": "h:1", "topics": "a", "timeout": "-1"}, "positive number of seconds"),
        ({"hub": "h:1", "topics": "a", "maxMessagesPerTrigger": "5"}, "is for streaming reads"),
    ],
)
def test_bad_options_name_the_option(options, message):
    with pytest.raises(OptionError, match=message):
        parse_options(options, streaming=False)


def test_streams_refuse_an_ending():
    with pytest.raises(OptionError, match="'endingSeq' is for batch reads"):
        parse(streaming=True, endingSeq="latest")


def test_an_empty_read_range_is_allowed():
    opts = parse(startingSeq='{"a": 4, "b": 1}', endingSeq='{"a": 3, "b": "latest"}')
    assert opts.starting["a"] == 4 and opts.ending["a"] == 3
