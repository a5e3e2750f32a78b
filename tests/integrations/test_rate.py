"""The request rate of one connection is shared by every worker through Redis."""

import time

import pytest

from integrations.errors import ProviderRateLimited
from integrations.http import MAX_INLINE_WAIT_S, pause_connection, wait_for_turn


def test_calls_of_one_connection_are_spaced_and_other_connections_are_not_held_up(settings):
    started = time.monotonic()
    for _ in range(4):
        wait_for_turn(101, 10)  # 10 per second: 0.1 s apart
    assert time.monotonic() - started >= 0.29
    other = time.monotonic()
    wait_for_turn(102, 10)
    assert time.monotonic() - other < 0.05


def test_a_slot_too_far_away_requeues_instead_of_sleeping_and_reserves_nothing(settings):
    rate = 1 / (MAX_INLINE_WAIT_S + 1)  # the second call's slot is beyond the longest inline wait
    wait_for_turn(103, rate)
    for _ in range(3):
        with pytest.raises(ProviderRateLimited) as held:
            wait_for_turn(103, rate)
        assert MAX_INLINE_WAIT_S < held.value.retry_after_s <= MAX_INLINE_WAIT_S + 1.1  # not pushed further


def test_a_pause_after_a_429_holds_every_caller(settings):
    pause_connection(104, 2)
    with pytest.raises(ProviderRateLimited) as held:
        wait_for_turn(104, 100)
    assert 1 < held.value.retry_after_s <= 2
