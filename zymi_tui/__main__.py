from zymi_tui.cli import main

raise SystemExit(main())
