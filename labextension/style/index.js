import './base.css';
import './diff.css';
import './figures.css';
import './toolbar.css';
import './notebook.css';
