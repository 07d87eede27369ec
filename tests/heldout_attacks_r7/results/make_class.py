"""Make a class of one student per held-out training file: `attacks` (every red team's attacks
of the training labs) or `honest` (every honest or correct training file)."""

import glob
import json
import shutil
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
kind, out = sys.argv[1], Path(sys.argv[2])
files = []
if kind == 'honest':
    for m in sorted(glob.glob(str(TESTS / 'mistakes/*/manifest.json'))):
        d = json.load(open(m)); ents = d if isinstance(d, list) else d.get('entries', d.get('files', []))
        for e in ents:
            if isinstance(e, dict) and str(e.get('file','')).startswith('lab_train_') and e.get('correct'):
                files.append(Path(m).parent / e['file'])
    files += sorted(TESTS.glob('heldout_attacks_r*/honest/lab_train_*.py'))
    files += sorted((TESTS / 'heldout_honest_r7').glob('lab_train_*.py'))
else:
    files += sorted(TESTS.glob('heldout_attacks_r*/attacks/lab_train_*.py'))
    files = [f for f in files if 'probe_frames' not in f.name]
out.mkdir(parents=True)
names = {}
for f in files:
    stu = f"{f.parent.parent.name if f.parent.name in ('honest','attacks') else f.parent.name}__{f.stem}"
    home = out / stu; home.mkdir()
    shutil.copy(f, home / (f.name.split('__')[0] + '.py'))
print(len(files))
