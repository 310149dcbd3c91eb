"""What importing rlplug's backends does to the process beyond defining things."""

from __future__ import annotations

import subprocess
import sys


def test_torchrl_backend_answers_tensordicts_pandas_lookup_without_scanning_sys_path():
    code = (
        "import importlib.util, sys\n"
        "installed = importlib.util.find_spec('pandas') is not None\n"
        "import rlplug.backends.torchrl\n"
        "if installed:\n"
        "    assert sys.modules.get('pandas', 'absent') is not None\n"
        "else:\n"
        "    assert sys.modules['pandas'] is None and importlib.util.find_spec('pandas') is None\n"
        "    try:\n"
        "        import pandas\n"
        "    except ImportError:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError('import pandas must still fail')\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr
