"""The inspector's messages table as painted: an assistant message's role says how many tool calls it made,
"assistant+1 call(s)", whole (a 14-cell column cut it to "assistant+1 ca")."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.test_life_advice_tui import dashboard_ready, open_by_key
from tests.tui_support import make_app, scenario_copy, sql
from zymi_tui.tui.inspector import InspectorScreen

SEQ = 74  # a call whose context holds assistant messages with tool calls (the inspector's screenshot)


async def test_every_painted_role_is_whole_at_80_and_120_columns(tmp_path: Path) -> None:
    db = scenario_copy("coding_compaction", tmp_path)
    (gid, stream), *_ = sql(db, "SELECT id, stream_id FROM events WHERE kind_tag = 'llm_call_started' "
                                "AND stream_id LIKE '%:step:%' AND sequence = ?", SEQ)  # fmt: skip
    # the oracle: the tool calls of each assistant message recorded before the call, read as JSON
    replies = sql(db, "SELECT data FROM events WHERE kind_tag = 'llm_call_completed' AND stream_id = ? "
                      "AND sequence < ?", stream, SEQ)  # fmt: skip
    messages = [json.loads(str(data))["kind"]["data"]["response_message"] for (data,) in replies]
    calls_made = {len(m["Assistant"].get("tool_calls") or []) for m in messages if "Assistant" in m}
    assert max(calls_made) >= 1, calls_made
    for size in ((80, 24), (120, 40)):
        app = make_app(db)
        async with app.run_test(size=size) as pilot:
            main = await dashboard_ready(pilot)
            assert main.events.jump_to(int(str(gid)))
            screen = await open_by_key(pilot, "i", InspectorScreen, lambda s: s.rebuilt is not None)
            await pilot.pause(0.3)
            assert screen.rebuilt is not None and screen.rebuilt.sequence == SEQ
            painted = "\n".join(str(strip.text) for strip in app.screen._compositor.render_strips())
        roles = re.findall(r"assistant\+\S*(?: \S+)?", painted)
        assert roles, painted
        whole = [r for r in roles if re.fullmatch(r"assistant\+\d+ call\(s\)", r)]
        assert whole == roles, (size, roles)
        assert {int(r.split("+")[1].split()[0]) for r in roles} <= calls_made, roles
