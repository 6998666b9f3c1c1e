import './base.css';
import './diff.css';
import './figures.css';
import './accessibility.css';
import './toolbar.css';
import './notebook.css';
