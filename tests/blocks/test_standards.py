"""Both blocks meet Prefect's block standard and are found the way Prefect finds blocks."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from prefect.blocks.core import Block
from prefect.testing.standard_test_suites import BlockStandardTestSuite

from prefect_waymark.blocks import GoalContractBlock, StateRefsBlock
from prefect_waymark.blocks._meta import LOGO_URL, PROJECT_URL

BLOCKS = [GoalContractBlock, StateRefsBlock]
LOGO = Path(__file__).resolve().parents[2] / "prefect_waymark" / "blocks" / "waymark-logo.png"


class TestGoalContractBlockStandards(BlockStandardTestSuite):
    @pytest.fixture
    def block(self) -> type[Block]:
        return GoalContractBlock


class TestStateRefsBlockStandards(BlockStandardTestSuite):
    @pytest.fixture
    def block(self) -> type[Block]:
        return StateRefsBlock


@pytest.mark.parametrize("block", BLOCKS)
def test_logo_is_a_square_png_shipped_in_the_repo(block: type[Block]) -> None:
    # Prefect's own image check needs Pillow and the network (neither is here): the same
    # assertions on the file the logo URL points at.
    assert str(block._logo_url) == LOGO_URL
    assert LOGO_URL.startswith(PROJECT_URL) and LOGO_URL.endswith(
        "prefect_waymark/blocks/waymark-logo.png"
    )
    data = LOGO.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == height and 45 < width < 1000


@pytest.mark.parametrize("block", BLOCKS)
def test_block_type_names_and_slugs(block: type[Block]) -> None:
    assert block.get_block_type_name().startswith("Waymark ")
    assert block.get_block_type_slug().startswith("waymark-")
    assert block.get_description()


def test_prefect_collections_entry_point_registers_the_blocks() -> None:
    code = (
        "from prefect.plugins import load_prefect_collections\n"
        "from prefect.blocks.core import Block\n"
        "from prefect.utilities.dispatch import get_registry_for_type\n"
        "loaded = load_prefect_collections()\n"
        "assert 'prefect_waymark' in loaded, loaded\n"
        "print(sorted(k for k in get_registry_for_type(Block) if k.startswith('waymark-')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['waymark-goal-contract', 'waymark-state-refs']"


def test_block_register_command_and_catalog(prefect_server: str) -> None:
    from prefect.client.orchestration import get_client

    # The server loaded the collection at start-up: the types are in its catalog already.
    with get_client(sync_client=True) as client:
        for block in BLOCKS:
            found = client.read_block_type_by_slug(block.get_block_type_slug())
            assert found.name == block.get_block_type_name()
            assert str(found.logo_url) == LOGO_URL
    prefect = str(Path(sys.executable).parent / "prefect")
    out = subprocess.run(
        [prefect, "block", "register", "-m", "prefect_waymark.blocks"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Waymark Goal Contract" in out.stdout and "Waymark State Refs" in out.stdout
